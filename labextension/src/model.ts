/**
 * The audit log as the sidebar sees it: a newest-first window of events that
 * follows the server.
 *
 * New events are announced on Jupyter Server's event bus; an announcement only
 * tells the model to ask the server for what is new (`since` the newest event
 * it holds), so filters are applied in one place, the server. A `Poll` asks
 * the same question on a timer: once a second until the event bus has proved
 * itself, rarely after that, and with backoff while the server fails.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { Event, ServerConnection } from '@jupyterlab/services';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

/** How much rarer the poll gets once the event bus has delivered. */
const LIVE_POLL_FACTOR = 15;

/** The schema the server extension announces audit events under. */
export const AUDIT_EVENT_SCHEMA = 'urn:tinyagent-fs:audit-event:v1';

/** One row of the list: an event without its diff and arguments. */
export interface IAuditSummary {
  event_id: string;
  seq: number;
  offset: number;
  timestamp: string;
  session_id: string;
  user: string;
  conversation_id: string | null;
  tool: string;
  paths: string[];
  root: string;
  decision: string;
  decided_by: string;
  outcome: string;
  denied: boolean;
  error_code: string | null;
  security_violation: boolean;
  lines_added: number;
  lines_removed: number;
  duration_ms: number;
  message: string;
  provider: string;
  has_diff?: boolean;
}

/** An event in full, as `/tinyagent-fs/audit/<id>` returns it. */
export interface IAuditEvent extends IAuditSummary {
  arguments: Record<string, unknown>;
  abs_paths: string[];
  diff: string | null;
  change_id: string | null;
  bytes_read: number;
  bytes_written: number;
}

export interface IAuditPage {
  events: IAuditSummary[];
  total: number;
  latest: number;
  next_before: number | null;
  generation: number;
}

export interface ISessionSummary {
  session_id: string;
  user: string;
  first_timestamp: string;
  last_timestamp: string;
  events: number;
  denied: number;
  errors: number;
  security_violations: number;
}

export interface IFacets {
  sessions: ISessionSummary[];
  tools: string[];
  outcomes: string[];
  total: number;
  log: string;
}

export interface IAuditFilters {
  session: string;
  tool: string;
  outcome: string;
  query: string;
}

/** How the list is kept current. */
export type LiveMode = 'connecting' | 'live' | 'polling' | 'offline';

export const EMPTY_FILTERS: IAuditFilters = {
  session: '',
  tool: '',
  outcome: '',
  query: ''
};

export class AuditModel {
  constructor(options: AuditModel.IOptions) {
    this._serverSettings =
      options.serverSettings ?? ServerConnection.makeSettings();
    this._pageSize = options.pageSize ?? 100;
    this._maxEvents = options.maxEvents ?? 1000;
    this._pollInterval = options.pollInterval ?? 1000;
    this._events = options.events ?? null;
    this._events?.stream.connect(this._onEmission, this);
    this._poll = new Poll({
      auto: false,
      factory: () => this._fetchNew(),
      frequency: {
        interval: this._pollInterval,
        backoff: true,
        max: 30 * 1000
      },
      name: 'tinyagent-fs:audit',
      standby: 'when-hidden'
    });
  }

  /** Emitted whenever events, facets, filters or the live mode change. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get events(): readonly IAuditSummary[] {
    return this._list;
  }

  get facets(): IFacets | null {
    return this._facets;
  }

  get filters(): IAuditFilters {
    return this._filters;
  }

  get hasOlder(): boolean {
    return this._nextBefore !== null;
  }

  get mode(): LiveMode {
    return this._mode;
  }

  get error(): string {
    return this._error;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Load the first page and start following the log. */
  async start(): Promise<void> {
    await this.reload();
    void this._poll.start();
  }

  /** Replace the filters and load the first page that matches them. */
  async setFilters(filters: Partial<IAuditFilters>): Promise<void> {
    this._filters = { ...this._filters, ...filters };
    await this.reload();
  }

  /** Forget what is held and fetch the newest page and the facets again. */
  async reload(): Promise<void> {
    const request = ++this._reloads;
    try {
      const [page, facets] = await Promise.all([
        this._requestPage({ limit: this._pageSize }),
        this._request<IFacets>('sessions')
      ]);
      if (request !== this._reloads) {
        return; // a newer reload (other filters) superseded this one
      }
      this._facets = facets;
      this._list = page.events;
      this._latest = page.latest;
      this._generation = page.generation;
      this._nextBefore = page.next_before;
      this._error = '';
    } catch (reason) {
      this._error = String(reason);
      this._setMode('offline');
    }
    this._changed.emit();
  }

  /** Append the next page of older events to the end of the list. */
  async loadOlder(): Promise<void> {
    if (this._nextBefore === null) {
      return;
    }
    let page: IAuditPage;
    try {
      page = await this._requestPage({
        before: this._nextBefore,
        limit: this._pageSize
      });
    } catch (reason) {
      this._error = String(reason);
      this._changed.emit();
      return;
    }
    const known = new Set(this._list.map(event => event.event_id));
    this._list = this._list.concat(
      page.events.filter(event => !known.has(event.event_id))
    );
    this._nextBefore = page.next_before;
    this._changed.emit();
  }

  /** The full event, diff included. */
  async fetchEvent(summary: IAuditSummary): Promise<IAuditEvent> {
    return this._request<IAuditEvent>(
      `audit/${encodeURIComponent(summary.event_id)}`,
      { offset: String(summary.offset) }
    );
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._events?.stream.disconnect(this._onEmission, this);
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _onEmission(_: unknown, emission: Event.Emission): void {
    if (emission.schema_id !== AUDIT_EVENT_SCHEMA) {
      return;
    }
    if (this._mode !== 'live') {
      // The bus works: the poll becomes a rare safety net.
      this._setMode('live');
      this._poll.frequency = {
        ...this._poll.frequency,
        interval: this._pollInterval * LIVE_POLL_FACTOR
      };
    }
    this._fetchNew().catch(() => undefined); // the failure is shown as the mode
  }

  /**
   * Fetch what was appended since the newest event held. Calls are chained so
   * a burst of announcements costs one request at a time, each picking up all
   * that arrived before it.
   */
  private _fetchNew(): Promise<void> {
    if (this._pending) {
      this._again = true;
      return this._pending;
    }
    this._pending = this._fetchNewOnce().finally(() => {
      this._pending = null;
      if (this._again) {
        this._again = false;
        this._fetchNew().catch(() => undefined);
      }
    });
    return this._pending;
  }

  private async _fetchNewOnce(): Promise<void> {
    const reloads = this._reloads;
    const page = await this._requestPage({
      since: this._latest,
      limit: this._maxEvents
    }).catch(reason => {
      this._error = String(reason);
      this._setMode('offline');
      this._changed.emit();
      throw reason; // the poll backs off
    });
    if (reloads !== this._reloads) {
      return;
    }
    if (page.generation !== this._generation || page.latest < this._latest) {
      await this.reload(); // the log was replaced: numbers start again
      return;
    }
    if (this._mode === 'offline' || this._mode === 'connecting') {
      this._setMode('polling');
    }
    this._error = '';
    // A reload that finished while this request was out may hold some of these
    // events already: keep only the ones newer than what the list has.
    const known = new Set(this._list.map(event => event.event_id));
    const fresh = page.events.filter(
      event => event.seq > this._latest && !known.has(event.event_id)
    );
    if (fresh.length) {
      // New sessions or tools for the filter choices, and fresh counts.
      const facets = await this._request<IFacets>('sessions');
      if (reloads !== this._reloads) {
        return;
      }
      this._facets = facets;
      this._latest = Math.max(this._latest, page.latest);
      this._list = fresh.concat(this._list).slice(0, this._maxEvents);
      if (this._list.length === this._maxEvents) {
        this._nextBefore = this._list[this._list.length - 1].seq;
      }
      this._changed.emit();
    } else {
      this._latest = Math.max(this._latest, page.latest);
    }
  }

  private _requestPage(options: {
    since?: number;
    before?: number;
    limit: number;
  }): Promise<IAuditPage> {
    const params: Record<string, string> = { limit: String(options.limit) };
    if (options.since !== undefined) {
      params.since = String(options.since);
    }
    if (options.before !== undefined) {
      params.before = String(options.before);
    }
    const { session, tool, outcome, query } = this._filters;
    if (session) {
      params.session = session;
    }
    if (tool) {
      params.tool = tool;
    }
    if (outcome) {
      params.outcome = outcome;
    }
    if (query) {
      params.q = query;
    }
    return this._request<IAuditPage>('audit', params);
  }

  private async _request<T>(
    path: string,
    params: Record<string, string> = {}
  ): Promise<T> {
    const settings = this._serverSettings;
    const url =
      URLExt.join(settings.baseUrl, 'tinyagent-fs', path) +
      URLExt.objectToQueryString(params);
    const response = await ServerConnection.makeRequest(url, {}, settings);
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as T;
  }

  private _setMode(mode: LiveMode): void {
    if (this._mode !== mode) {
      this._mode = mode;
      this._changed.emit();
    }
  }

  private _changed = new Signal<this, void>(this);
  private _serverSettings: ServerConnection.ISettings;
  private _events: Event.IManager | null;
  private _poll: Poll;
  private _pageSize: number;
  private _maxEvents: number;
  private _pollInterval: number;
  private _list: IAuditSummary[] = [];
  private _facets: IFacets | null = null;
  private _filters: IAuditFilters = { ...EMPTY_FILTERS };
  private _latest = -1;
  private _generation = -1;
  private _nextBefore: number | null = null;
  private _mode: LiveMode = 'connecting';
  private _error = '';
  private _reloads = 0;
  private _pending: Promise<void> | null = null;
  private _again = false;
  private _isDisposed = false;
}

export namespace AuditModel {
  export interface IOptions {
    /** Where announcements come from; without it the model only polls. */
    events?: Event.IManager | null;
    serverSettings?: ServerConnection.ISettings;
    /** Events fetched per page. */
    pageSize?: number;
    /** Events kept in the list; older ones are fetched again on demand. */
    maxEvents?: number;
    /** Milliseconds between polls until the event bus has delivered. */
    pollInterval?: number;
  }
}
