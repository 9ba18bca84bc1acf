/**
 * How events read in the sidebar: labels a person understands, local times,
 * and diffs coloured line by line.
 */
import { TranslationBundle } from '@jupyterlab/translation';

/**
 * Text with every character that could hide or reorder what is shown (C0/C1
 * controls, DEL, bidirectional overrides, zero-width characters) written as a
 * visible escape, as the Python side's ``display_safe.visible`` does (a tab
 * stays: it only adds space).
 */
export function visible(text: string, keepNewlines = false): string {
  const pattern = keepNewlines
    ? /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g
    : /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
  return text.replace(pattern, char => {
    const code = char.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A unified diff as lines coloured by kind; text only, never HTML from the log. */
export function renderDiff(diff: string, label: string): HTMLElement {
  const block = document.createElement('pre');
  block.className = 'jp-TinyAgentFS-diff';
  block.setAttribute('aria-label', label);
  for (const text of diff.replace(/\n$/, '').split('\n')) {
    const line = document.createElement('span');
    line.className = `jp-TinyAgentFS-diffLine jp-mod-${diffKind(text)}`;
    line.textContent = visible(text, true) + '\n';
    block.append(line);
  }
  return block;
}

function diffKind(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) {
    return 'file';
  }
  if (line.startsWith('@@')) {
    return 'hunk';
  }
  if (line.startsWith('+')) {
    return 'added';
  }
  if (line.startsWith('-')) {
    return 'removed';
  }
  return 'context';
}

export function formatTime(timestamp: string): string {
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) {
    return timestamp;
  }
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

export function decisionLabel(
  trans: TranslationBundle,
  decision: string
): string {
  switch (decision) {
    case 'proceed':
      return trans.__('approved');
    case 'deny':
      return trans.__('denied');
    case 'modify':
      return trans.__('modified');
    case 'alternative_response':
      return trans.__('answered instead');
    case 'none':
      return trans.__('no review');
    default:
      return decision;
  }
}

export function outcomeLabel(
  trans: TranslationBundle,
  outcome: string
): string {
  switch (outcome) {
    case 'ok':
      return trans.__('ok');
    case 'denied':
      return trans.__('denied');
    case 'error':
      return trans.__('error');
    default:
      return outcome;
  }
}
