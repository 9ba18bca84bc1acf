/**
 * The Pending section at the top of the sidebar: one card per proposal with
 * the same diff view as an audit event and the card's choices (Approve,
 * Modify the proposed content, Deny with a reason, trust for the session).
 *
 * Cards are keyed by proposal id and kept across updates, so a reason being
 * typed or content being edited survives other proposals coming and going.
 * Everything the agent sent is shown as text (`textContent`), never as HTML.
 *
 * From the keyboard: each card is a region named for the call; when a card
 * that holds the focus goes (answered here or elsewhere), the focus moves to
 * the next card, or to the heading when none is left, never to the page.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { renderDiff, visible } from './format';
import { IAnswer, IProposal, PendingModel } from './pending';

export class PendingSection {
  constructor(options: { model: PendingModel; trans: TranslationBundle }) {
    this._model = options.model;
    this._trans = options.trans;
    this.node.className = 'jp-TinyAgentFS-pending';
    this.node.setAttribute('aria-label', this._trans.__('Pending approvals'));
    this._heading.className = 'jp-TinyAgentFS-pendingHeading';
    this._heading.tabIndex = -1;
    this._list.className = 'jp-TinyAgentFS-pendingList';
    this.node.append(this._heading, this._list);
    // An empty section stays while it holds the focus and goes when the keyboard
    // leaves it; a click elsewhere leaves it until the next change, since the
    // sidebar shifting under the pointer would make that click miss.
    this.node.addEventListener('focusout', () =>
      window.setTimeout(() => {
        const now = document.activeElement;
        if (now && !this.node.contains(now) && now.matches(':focus-visible')) {
          this._render();
        }
      })
    );
    this._model.changed.connect(this._render, this);
    this._render();
  }

  readonly node = document.createElement('section');

  dispose(): void {
    this._model.changed.disconnect(this._render, this);
  }

  private _render(): void {
    const proposals = this._model.proposals;
    this._heading.textContent = proposals.length
      ? this._trans._n(
          'Pending: %1 change waits for you',
          'Pending: %1 changes wait for you',
          proposals.length
        )
      : this._trans.__('Pending: nothing waits for you');
    const keep = new Set(proposals.map(p => p.id));
    // The focus moves before its card goes: a removed element takes it to the page.
    const order = [...this._cards.keys()];
    const losing = order.findIndex(
      id =>
        !keep.has(id) && this._cards.get(id)?.contains(document.activeElement)
    );
    if (losing >= 0) {
      this._nextFocus(order.slice(losing + 1), keep).focus();
    }
    for (const [id, card] of this._cards) {
      if (!keep.has(id)) {
        card.remove();
        this._cards.delete(id);
      }
    }
    // Oldest first, as the server lists; a card already in place is not moved,
    // since moving an element takes the focus from whatever is typed in it.
    proposals.forEach((proposal, at) => {
      let card = this._cards.get(proposal.id);
      if (!card) {
        card = this._card(proposal);
        this._cards.set(proposal.id, card);
      }
      const there = this._list.children[at] ?? null;
      if (there !== card) {
        this._list.insertBefore(card, there);
      }
    });
    this.node.hidden =
      proposals.length === 0 &&
      !this._model.error &&
      !this.node.contains(document.activeElement);
  }

  /** The first card that stays among ``after``, else the last that stays, else the heading. */
  private _nextFocus(after: string[], keep: Set<string>): HTMLElement {
    const staying = [...this._cards.keys()].filter(id => keep.has(id));
    const id = after.find(next => keep.has(next)) ?? staying.pop();
    return (id && this._cards.get(id)) || this._heading;
  }

  private _card(proposal: IProposal): HTMLElement {
    const trans = this._trans;
    const card = document.createElement('section');
    card.className = 'jp-TinyAgentFS-pendingRow';
    card.dataset.approvalId = proposal.id;
    card.dataset.tool = proposal.tool;
    card.tabIndex = -1;
    const call = visible(
      `${proposal.tool} ${proposal.paths.join(', ')}`.trim()
    );
    card.setAttribute('aria-label', trans.__('Approve or deny %1', call));

    const title = document.createElement('h3');
    title.textContent = call;
    const meta = document.createElement('p');
    meta.className = 'jp-TinyAgentFS-pendingMeta';
    meta.textContent = visible(
      trans.__(
        '%1 · session %2 · %3',
        proposal.origin || trans.__('an agent'),
        proposal.session_id.slice(0, 12),
        proposal.risk
      )
    );
    meta.title = visible(`${proposal.root}\n${proposal.asked_by}`, true);
    const parts: HTMLElement[] = [title, meta];
    if (proposal.diff) {
      parts.push(renderDiff(proposal.diff, trans.__('Proposed change')));
    } else {
      const args = document.createElement('pre');
      args.className = 'jp-TinyAgentFS-pendingArgs';
      args.textContent = visible(JSON.stringify(proposal.args, null, 2), true);
      parts.push(args);
    }
    const trust = this._trust(proposal);
    if (trust) {
      parts.push(trust.node);
    }
    const error = document.createElement('p');
    error.className = 'jp-TinyAgentFS-error';
    error.setAttribute('role', 'alert');
    error.hidden = true;
    const panel = document.createElement('div');
    panel.className = 'jp-TinyAgentFS-pendingPanel';
    const send = async (answer: IAnswer): Promise<void> => {
      if (card.contains(document.activeElement)) {
        card.focus(); // a disabled button would drop the focus to the page
      }
      card.classList.add('jp-mod-sending');
      card
        .querySelectorAll('button')
        .forEach(button => (button.disabled = true));
      try {
        await this._model.answer(proposal, {
          ...answer,
          trust: trust?.value() ?? { tool: false, paths: [] }
        });
      } catch (reason) {
        error.textContent = trans.__('Not sent: %1', String(reason));
        error.hidden = false;
        card.classList.remove('jp-mod-sending');
        card
          .querySelectorAll('button')
          .forEach(button => (button.disabled = false));
      }
    };
    const buttons = document.createElement('div');
    buttons.className = 'jp-TinyAgentFS-pendingButtons';
    panel.id = `jp-TinyAgentFS-pendingPanel-${proposal.id}`;
    const opener = (
      action: string,
      label: string,
      mod: string,
      form: (close: () => void) => HTMLElement[]
    ): HTMLButtonElement => {
      const button = this._button(action, label, mod, () => {
        const close = (): void => {
          panel.replaceChildren();
          button.setAttribute('aria-expanded', 'false');
          button.focus();
        };
        buttons
          .querySelectorAll('[aria-expanded]')
          .forEach(other => other.setAttribute('aria-expanded', 'false'));
        panel.replaceChildren(...form(close));
        button.setAttribute('aria-expanded', 'true');
        panel.querySelector<HTMLElement>('input, textarea')?.focus();
      });
      button.setAttribute('aria-expanded', 'false');
      button.setAttribute('aria-controls', panel.id);
      return button;
    };
    buttons.append(
      this._button(
        'approve',
        trans.__('Approve'),
        'jp-TinyAgentFS-approve',
        () => send({ verdict: 'proceed' })
      ),
      opener('modify', trans.__('Modify'), 'jp-TinyAgentFS-modify', close =>
        this._editor(proposal, send, close)
      ),
      opener('deny', trans.__('Deny'), 'jp-TinyAgentFS-deny', close =>
        this._reason(send, close)
      )
    );
    parts.push(buttons, panel, error);
    card.append(...parts);
    return card;
  }

  private _trust(
    proposal: IProposal
  ): { node: HTMLElement; value: () => IAnswer['trust'] } | null {
    if (!proposal.can_trust) {
      return null;
    }
    const trans = this._trans;
    const node = document.createElement('div');
    node.className = 'jp-TinyAgentFS-pendingTrust';
    const box = (label: string, name: string): HTMLInputElement => {
      const wrapper = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.dataset.trust = name;
      wrapper.append(input, document.createTextNode(' ' + visible(label)));
      node.append(wrapper);
      return input;
    };
    const paths = proposal.paths.length
      ? box(
          trans.__('Trust %1 for this session', proposal.paths.join(', ')),
          'paths'
        )
      : null;
    const tool = box(
      trans.__('Trust every %1 call for this session', proposal.tool),
      'tool'
    );
    return {
      node,
      value: () => ({
        tool: tool.checked,
        paths: paths?.checked ? [...proposal.paths] : []
      })
    };
  }

  private _editor(
    proposal: IProposal,
    send: (answer: IAnswer) => Promise<void>,
    close: () => void
  ): HTMLElement[] {
    const trans = this._trans;
    const fields: { path: string; area: HTMLTextAreaElement }[] = [];
    const nodes: HTMLElement[] = [];
    const files = proposal.editable.length
      ? proposal.editable
      : [
          {
            path: '',
            text: JSON.stringify(proposal.args, null, 2)
          }
        ];
    for (const file of files) {
      const label = document.createElement('label');
      label.className = 'jp-TinyAgentFS-pendingEditLabel';
      label.textContent = file.path
        ? visible(file.path)
        : trans.__('Arguments (JSON)');
      const area = document.createElement('textarea');
      area.className = 'jp-mod-styled jp-TinyAgentFS-pendingEdit';
      area.dataset.path = file.path;
      area.value = file.text;
      area.rows = Math.min(20, Math.max(4, file.text.split('\n').length + 1));
      area.spellcheck = false;
      area.addEventListener('keydown', event => {
        if (event.key === 'Escape') {
          event.stopPropagation();
          close();
        }
      });
      label.append(area);
      fields.push({ path: file.path, area });
      nodes.push(label);
    }
    const apply = this._button(
      'confirm-modify',
      trans.__('Apply my version'),
      'jp-TinyAgentFS-modify',
      () => {
        if (!proposal.editable.length) {
          let args: Record<string, unknown>;
          try {
            args = JSON.parse(fields[0].area.value);
          } catch (reason) {
            fields[0].area.setCustomValidity(String(reason));
            fields[0].area.reportValidity();
            return;
          }
          void send({ verdict: 'modify', args });
          return;
        }
        const content: Record<string, string> = {};
        for (const field of fields) {
          content[field.path] = field.area.value;
        }
        void send({ verdict: 'modify', content });
      }
    );
    return [...nodes, this._row(apply, this._cancel(close))];
  }

  private _reason(
    send: (answer: IAnswer) => Promise<void>,
    close: () => void
  ): HTMLElement[] {
    const trans = this._trans;
    const input = document.createElement('input');
    input.type = 'text';
    input.className = 'jp-mod-styled jp-TinyAgentFS-pendingReason';
    input.placeholder = trans.__('optional: why, so the model can do better');
    input.setAttribute('aria-label', trans.__('Reason'));
    const deny = this._button(
      'confirm-deny',
      trans.__('Deny'),
      'jp-TinyAgentFS-deny',
      () => void send({ verdict: 'deny', reason: input.value })
    );
    input.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        deny.click();
      } else if (event.key === 'Escape') {
        event.stopPropagation();
        close();
      }
    });
    return [input, this._row(deny, this._cancel(close))];
  }

  private _cancel(close: () => void): HTMLButtonElement {
    return this._button('cancel', this._trans.__('Cancel'), '', close);
  }

  private _row(...children: HTMLElement[]): HTMLElement {
    const row = document.createElement('div');
    row.className = 'jp-TinyAgentFS-pendingButtons';
    row.append(...children);
    return row;
  }

  private _button(
    action: string,
    label: string,
    mod: string,
    onClick: () => void
  ): HTMLButtonElement {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = `jp-mod-styled jp-TinyAgentFS-pendingButton ${mod}`;
    button.dataset.action = action;
    button.textContent = label;
    button.addEventListener('click', onClick);
    return button;
  }

  private _model: PendingModel;
  private _trans: TranslationBundle;
  private _heading = document.createElement('h2');
  private _list = document.createElement('div');
  private _cards = new Map<string, HTMLElement>();
}
