/**
 * How events read in the sidebar: labels a person understands, local times,
 * and diffs coloured line by line.
 */
import { TranslationBundle } from '@jupyterlab/translation';

// The same characters as tinyagent_fs/text/display_safe.py: C0/C1 controls, DEL, the
// soft hyphen, bidirectional marks, overrides and isolates, zero-width and
// line-separator characters, the byte order mark and Unicode tag characters.
const HIDDEN =
  '\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e' +
  '\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\ufeff\\u{e0000}-\\u{e007f}';
const INVISIBLE = new RegExp(`[${HIDDEN}]`, 'gu');
const INVISIBLE_OR_NEWLINE = new RegExp(`[${HIDDEN}\\n]`, 'gu');

/** How one hidden character reads: ``⟨U+202E⟩``. */
export function hiddenToken(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return `⟨U+${code.toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/**
 * Text with every character that could hide or reorder what is shown written
 * as a ``⟨U+202E⟩`` token, as the Python side's ``display_safe.visible`` does
 * (a tab stays: it only adds space; a newline stays with ``keepNewlines``).
 */
export function visible(text: string, keepNewlines = false): string {
  return text.replace(
    keepNewlines ? INVISIBLE : INVISIBLE_OR_NEWLINE,
    hiddenToken
  );
}

/**
 * ``text`` into ``node`` as text nodes, each hidden character a marked
 * ``<span class="jp-TinyAgentFS-hiddenChar">⟨U+202E⟩</span>``; never HTML.
 */
export function setVisibleText(
  node: HTMLElement,
  text: string,
  keepNewlines = false
): void {
  const pattern = keepNewlines ? INVISIBLE : INVISIBLE_OR_NEWLINE;
  const parts: (string | Node)[] = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index ?? 0;
    if (at > last) {
      parts.push(text.slice(last, at));
    }
    const marker = document.createElement('span');
    marker.className = 'jp-TinyAgentFS-hiddenChar';
    marker.textContent = hiddenToken(match[0]);
    parts.push(marker);
    last = at + match[0].length;
  }
  if (last < text.length || !parts.length) {
    parts.push(text.slice(last));
  }
  node.replaceChildren(...parts);
}

/** A unified diff as lines coloured by kind; text only, never HTML from the log. */
export function renderDiff(diff: string, label: string): HTMLElement {
  const block = document.createElement('pre');
  block.className = 'jp-TinyAgentFS-diff';
  block.setAttribute('aria-label', label);
  for (const text of diff.replace(/\n$/, '').split('\n')) {
    const line = document.createElement('span');
    line.className = `jp-TinyAgentFS-diffLine jp-mod-${diffKind(text)}`;
    setVisibleText(line, text + '\n', true);
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

/**
 * Whether a person answered, from the event's ``decided_by``: the hooks that ask
 * (terminal, MCP elicitation, the notebook card's "<user> (notebook)", the
 * sidebar's "jupyter-sidebar:<user>"). The same
 * rule as ``decided_by_person`` in tinyagent_fs/hooks/policies.py.
 */
export function decidedByPerson(decidedBy: string): boolean {
  return (
    decidedBy === 'terminal' ||
    decidedBy === 'mcp-elicitation' ||
    decidedBy.endsWith(' (notebook)') ||
    decidedBy.startsWith('jupyter-sidebar:')
  );
}

export function decisionLabel(
  trans: TranslationBundle,
  decision: string,
  decidedBy = ''
): string {
  switch (decision) {
    case 'proceed':
      return decidedByPerson(decidedBy)
        ? trans.__('approved')
        : trans.__('allowed by policy');
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
