/**
 * The sidebar: filters on top, the events newest first, and one event with its
 * diff when a row is clicked. Plain DOM on a Lumino widget; all state lives in
 * the model, so rendering is a pure function of it.
 */
import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import {
  decisionLabel,
  formatTime,
  outcomeLabel,
  renderDiff,
  setVisibleText,
  visible
} from './format';
import { auditIcon } from './icon';
import { undoControl } from './undo';
import { AuditModel, IAuditEvent, IAuditSummary, LiveMode } from './model';

const SEARCH_DELAY_MS = 250;

export class AuditPanel extends Widget {
  constructor(options: AuditPanel.IOptions) {
    super();
    this._model = options.model;
    this._trans = options.trans;
    this._openDiff = options.openDiff;
    this._serverSettings = options.serverSettings;
    this.id = 'tinyagent-fs-audit';
    this.addClass('jp-TinyAgentFS-panel');
    this.title.icon = auditIcon;
    this.title.caption = this._trans.__('Agent audit log');
    this._build();
    this._model.changed.connect(this._render, this);
    this._render();
  }

  get model(): AuditModel {
    return this._model;
  }

  /** Show one event in full, with its diff. */
  async openEvent(summary: IAuditSummary): Promise<void> {
    // The row that had the focus is hidden now: the focus moves with the person,
    // to the detail and then its back button, and back to the row after.
    const keyboard = this.node.contains(document.activeElement);
    this._opened = summary.event_id;
    this._detail.replaceChildren(this._note(this._trans.__('Loading…')));
    this._showDetail(true);
    if (keyboard) {
      this._detail.focus();
    }
    try {
      const event = await this._model.fetchEvent(summary);
      this._detail.replaceChildren(...this._renderDetail(event));
      if (keyboard) {
        this._detail
          .querySelector<HTMLElement>('.jp-TinyAgentFS-back')
          ?.focus();
      }
    } catch (reason) {
      this._detail.replaceChildren(
        this._backButton(),
        this._note(
          this._trans.__('Could not load the event: %1', String(reason)),
          'jp-TinyAgentFS-error'
        )
      );
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    window.clearTimeout(this._searchTimer);
    this._model.changed.disconnect(this._render, this);
    super.dispose();
  }

  private _build(): void {
    const trans = this._trans;
    const header = document.createElement('header');
    header.className = 'jp-TinyAgentFS-header';
    const title = document.createElement('h2');
    title.textContent = trans.__('Agent audit log');
    this._status.className = 'jp-TinyAgentFS-status';
    header.append(title, this._status);

    const filters = document.createElement('div');
    filters.className = 'jp-TinyAgentFS-filters';
    this._session = this._select('session', trans.__('Session'));
    this._tool = this._select('tool', trans.__('Tool'));
    this._outcome = this._select('outcome', trans.__('Outcome'));
    this._search.type = 'search';
    this._search.className = 'jp-mod-styled jp-TinyAgentFS-search';
    this._search.placeholder = trans.__('Search paths, messages, diffs');
    this._search.setAttribute('aria-label', trans.__('Search the audit log'));
    this._search.addEventListener('input', () => {
      window.clearTimeout(this._searchTimer);
      this._searchTimer = window.setTimeout(() => {
        void this._model.setFilters({ query: this._search.value.trim() });
      }, SEARCH_DELAY_MS);
    });
    filters.append(this._search, this._session, this._tool, this._outcome);

    this._list.className = 'jp-TinyAgentFS-list';
    this._list.setAttribute('role', 'list');
    this._older.className = 'jp-mod-styled jp-TinyAgentFS-older';
    this._older.textContent = trans.__('Load older events');
    this._older.addEventListener('click', () => void this._model.loadOlder());
    this._overview.className = 'jp-TinyAgentFS-overview';
    this._overview.append(filters, this._list, this._older);
    this._detail.className = 'jp-TinyAgentFS-detail';
    this._detail.tabIndex = -1;
    this._showDetail(false);
    this.node.append(header, this._overview, this._detail);
  }

  private _select(
    name: 'session' | 'tool' | 'outcome',
    label: string
  ): HTMLSelectElement {
    const select = document.createElement('select');
    select.className = 'jp-mod-styled jp-TinyAgentFS-filter';
    select.dataset.filter = name;
    select.setAttribute('aria-label', label);
    select.addEventListener('change', () => {
      void this._model.setFilters({ [name]: select.value });
    });
    return select;
  }

  private _render(): void {
    const model = this._model;
    this._status.textContent = this._statusText(model.mode);
    this._status.dataset.mode = model.mode;
    this._status.title = model.error || model.facets?.log || '';
    this._fillFilters();
    // Each row a list item holding one button: read as "button, <event>", and
    // Enter or Space opens it like a click.
    const rows: HTMLElement[] = model.events.map(event => {
      const item = document.createElement('div');
      item.setAttribute('role', 'listitem');
      item.append(this._row(event));
      return item;
    });
    if (!rows.length) {
      rows.push(
        this._note(
          model.filters.session ||
            model.filters.tool ||
            model.filters.outcome ||
            model.filters.query
            ? this._trans.__('No event matches these filters.')
            : this._trans.__('No tool calls recorded yet.')
        )
      );
    }
    this._list.replaceChildren(...rows);
    this._older.hidden = !model.hasOlder;
  }

  private _statusText(mode: LiveMode): string {
    const trans = this._trans;
    switch (mode) {
      case 'live':
        return trans.__('Live');
      case 'polling':
        return trans.__('Polling');
      case 'offline':
        return trans.__('Server unreachable');
      default:
        return trans.__('Connecting…');
    }
  }

  private _fillFilters(): void {
    const trans = this._trans;
    const facets = this._model.facets;
    const filters = this._model.filters;
    const sessions = (facets?.sessions ?? []).map(session => ({
      value: session.session_id,
      label: trans._n(
        '%2 (%1 call)',
        '%2 (%1 calls)',
        session.events,
        visible(session.session_id) || trans.__('no session')
      )
    }));
    this._options(
      this._session,
      trans.__('All sessions'),
      sessions,
      filters.session
    );
    const tools = (facets?.tools ?? []).map(tool => ({
      value: tool,
      label: visible(tool)
    }));
    this._options(this._tool, trans.__('All tools'), tools, filters.tool);
    const outcomes = [
      { value: 'ok', label: trans.__('ok') },
      { value: 'denied', label: trans.__('denied') },
      { value: 'error', label: trans.__('error') },
      { value: 'security', label: trans.__('security violation') }
    ];
    this._options(
      this._outcome,
      trans.__('All outcomes'),
      outcomes,
      filters.outcome
    );
  }

  private _options(
    select: HTMLSelectElement,
    anyLabel: string,
    choices: { value: string; label: string }[],
    selected: string
  ): void {
    if (selected && !choices.some(choice => choice.value === selected)) {
      choices = [{ value: selected, label: selected }, ...choices];
    }
    const options = [{ value: '', label: anyLabel }, ...choices].map(choice => {
      const option = document.createElement('option');
      option.value = choice.value;
      option.textContent = choice.label;
      return option;
    });
    select.replaceChildren(...options);
    select.value = selected;
  }

  private _row(event: IAuditSummary): HTMLElement {
    const trans = this._trans;
    const row = document.createElement('button');
    row.type = 'button';
    row.className = 'jp-TinyAgentFS-row';
    row.dataset.eventId = event.event_id;
    row.dataset.outcome = event.outcome;
    row.classList.toggle('jp-mod-denied', event.denied);
    row.classList.toggle('jp-mod-security', event.security_violation);
    row.classList.toggle('jp-mod-error', event.outcome === 'error');
    row.addEventListener('click', () => void this.openEvent(event));

    const top = document.createElement('div');
    top.className = 'jp-TinyAgentFS-rowTop';
    top.append(
      this._span(
        'jp-TinyAgentFS-time',
        formatTime(event.timestamp),
        event.timestamp
      ),
      this._span('jp-TinyAgentFS-tool', event.tool),
      this._span(
        'jp-TinyAgentFS-session',
        event.session_id.slice(0, 8),
        trans.__('Session %1', event.session_id)
      )
    );
    const badges = document.createElement('div');
    badges.className = 'jp-TinyAgentFS-badges';
    if (event.decision && event.decision !== 'none' && !event.denied) {
      badges.append(
        this._badge(
          'decision',
          decisionLabel(trans, event.decision, event.decided_by),
          event.decided_by
        )
      );
    }
    badges.append(
      this._badge(
        `outcome-${event.outcome}`,
        outcomeLabel(trans, event.outcome)
      )
    );
    if (event.security_violation) {
      badges.append(this._badge('security', trans.__('security violation')));
    }
    if (event.lines_added || event.lines_removed) {
      badges.append(
        this._badge('lines', `+${event.lines_added} −${event.lines_removed}`)
      );
    }
    const path = this._span(
      'jp-TinyAgentFS-path',
      event.paths.join(', ') || trans.__('(no path)'),
      event.message
    );
    row.append(top, path, badges);
    return row;
  }

  private _renderDetail(event: IAuditEvent): HTMLElement[] {
    const trans = this._trans;
    const heading = document.createElement('h3');
    setVisibleText(heading, `${event.tool} ${event.paths.join(', ')}`);
    heading.classList.toggle('jp-mod-denied', event.denied);
    heading.classList.toggle('jp-mod-security', event.security_violation);
    const fields: [string, string][] = [
      [trans.__('Time'), formatTime(event.timestamp)],
      [trans.__('Session'), event.session_id],
      [trans.__('User'), event.user],
      [
        trans.__('Decision'),
        `${decisionLabel(trans, event.decision, event.decided_by)} ${event.decided_by}`.trim()
      ],
      [trans.__('Outcome'), outcomeLabel(trans, event.outcome)],
      [trans.__('Error code'), event.error_code ?? ''],
      [
        trans.__('Security violation'),
        event.security_violation ? trans.__('yes') : ''
      ],
      [trans.__('Lines'), `+${event.lines_added} −${event.lines_removed}`],
      [trans.__('Message'), event.message],
      [trans.__('Root'), event.root],
      [trans.__('Provider'), event.provider],
      [trans.__('Duration'), trans.__('%1 ms', event.duration_ms)]
    ];
    const table = document.createElement('dl');
    table.className = 'jp-TinyAgentFS-fields';
    for (const [label, value] of fields) {
      if (!value) {
        continue;
      }
      const term = document.createElement('dt');
      term.textContent = label;
      const description = document.createElement('dd');
      setVisibleText(description, value, true);
      table.append(term, description);
    }
    const args = document.createElement('details');
    const argsSummary = document.createElement('summary');
    argsSummary.textContent = trans.__('Arguments');
    const argsBody = document.createElement('pre');
    setVisibleText(argsBody, JSON.stringify(event.arguments, null, 2), true);
    args.append(argsSummary, argsBody);
    const parts: HTMLElement[] = [this._backButton(), heading, table, args];
    if (event.change_id && event.outcome === 'ok') {
      parts.push(undoControl(event, this._serverSettings, this._trans));
    }
    if (event.diff) {
      parts.push(this._fullWidthButton(event));
    }
    parts.push(
      event.diff
        ? renderDiff(event.diff, trans.__('Diff'))
        : this._note(trans.__('This call changed no file.'))
    );
    return parts;
  }

  private _fullWidthButton(event: IAuditEvent): HTMLElement {
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'jp-mod-styled jp-TinyAgentFS-openDiff';
    open.textContent = this._trans.__('Open diff full width');
    open.addEventListener('click', () => this._openDiff(event));
    return open;
  }

  private _backButton(): HTMLElement {
    const back = document.createElement('button');
    back.type = 'button';
    back.className = 'jp-mod-styled jp-TinyAgentFS-back';
    // The arrow is decoration: the button's name is the words alone.
    const arrow = document.createElement('span');
    arrow.setAttribute('aria-hidden', 'true');
    arrow.textContent = '← ';
    back.append(arrow, this._trans.__('All events'));
    back.addEventListener('click', () => {
      this._showDetail(false);
      const rows = this._list.querySelectorAll<HTMLElement>(
        '.jp-TinyAgentFS-row'
      );
      const row = Array.from(rows).find(
        r => r.dataset.eventId === this._opened
      );
      (row ?? this._search).focus();
    });
    return back;
  }

  private _showDetail(show: boolean): void {
    this._overview.hidden = show;
    this._detail.hidden = !show;
  }

  private _span(className: string, text: string, title = ''): HTMLElement {
    const span = document.createElement('span');
    span.className = className;
    setVisibleText(span, text);
    if (title) {
      span.title = visible(title, true);
    }
    return span;
  }

  private _badge(kind: string, text: string, title = ''): HTMLElement {
    const badge = this._span(
      `jp-TinyAgentFS-badge jp-TinyAgentFS-badge-${kind}`,
      text,
      title
    );
    badge.dataset.kind = kind;
    return badge;
  }

  private _note(text: string, className = 'jp-TinyAgentFS-note'): HTMLElement {
    const note = document.createElement('p');
    note.className = className;
    note.textContent = text;
    return note;
  }

  private _model: AuditModel;
  private _trans: TranslationBundle;
  private _openDiff: (event: IAuditSummary) => void;
  private _serverSettings: ServerConnection.ISettings;
  private _status = document.createElement('span');
  private _session!: HTMLSelectElement;
  private _tool!: HTMLSelectElement;
  private _outcome!: HTMLSelectElement;
  private _search = document.createElement('input');
  private _searchTimer = 0;
  private _list = document.createElement('div');
  private _older = document.createElement('button');
  private _overview = document.createElement('div');
  private _detail = document.createElement('div');
  private _opened = '';
}

export namespace AuditPanel {
  export interface IOptions {
    model: AuditModel;
    trans: TranslationBundle;
    /** Show an event's diff in the main area, full width. */
    openDiff: (event: IAuditSummary) => void;
    /** Where Undo requests go. */
    serverSettings: ServerConnection.ISettings;
  }
}
