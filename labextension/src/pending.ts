/**
 * Proposals that wait for the person, as the server's approval broker holds
 * them (docs/approval-protocol.md).
 *
 * The broker announces every change of the pending set on Jupyter Server's
 * event bus (ids only); the model then fetches the list. A `Poll` asks the
 * same question every two seconds until the bus has proved itself, rarely
 * after that. Answers are POSTed through `ServerConnection`, which sends the
 * XSRF token with the login cookie, as Jupyter Server demands of a browser.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { Event, ServerConnection } from '@jupyterlab/services';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

/** The schema the broker announces changes of the pending set under. */
export const APPROVAL_SCHEMA = 'urn:tinyagent-fs:approval:v1';

const LIVE_POLL_FACTOR = 15;

export interface IEditableFile {
  path: string;
  text: string;
}

/** One proposal, as `GET /tinyagent-fs/approvals` lists it. */
export interface IProposal {
  id: string;
  session_id: string;
  tool: string;
  risk: string;
  args: Record<string, unknown>;
  diff: string;
  paths: string[];
  editable: IEditableFile[];
  can_trust: boolean;
  origin: string;
  root: string;
  asked_by: string;
  proposal_hash: string;
  created: number;
  expires: number | null;
  state: string;
}

/** What the person decided, as the card's controls hold it. */
export interface IAnswer {
  verdict: 'proceed' | 'deny' | 'modify';
  reason?: string;
  content?: Record<string, string>;
  args?: Record<string, unknown>;
  trust?: { tool: boolean; paths: string[] };
}

export class PendingModel {
  constructor(options: PendingModel.IOptions) {
    this._serverSettings =
      options.serverSettings ?? ServerConnection.makeSettings();
    this._pollInterval = options.pollInterval ?? 2000;
    this._events = options.events ?? null;
    this._events?.stream.connect(this._onEmission, this);
    this._poll = new Poll({
      auto: false,
      factory: () => this.refresh(),
      frequency: {
        interval: this._pollInterval,
        backoff: true,
        max: 30 * 1000
      },
      name: 'tinyagent-fs:pending',
      standby: 'never'
    });
  }

  /** Emitted when the pending set changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get proposals(): readonly IProposal[] {
    return this._proposals;
  }

  get count(): number {
    return this._proposals.length;
  }

  get error(): string {
    return this._error;
  }

  async start(): Promise<void> {
    await this.refresh().catch(() => undefined);
    void this._poll.start();
  }

  /** Fetch the pending set; calls during a fetch are folded into one more. */
  refresh(): Promise<void> {
    if (this._pending) {
      this._again = true;
      return this._pending;
    }
    this._pending = this._fetch().finally(() => {
      this._pending = null;
      if (this._again) {
        this._again = false;
        this.refresh().catch(() => undefined);
      }
    });
    return this._pending;
  }

  /** Send the person's answer; a refusal (409: changed or settled) is thrown. */
  async answer(proposal: IProposal, answer: IAnswer): Promise<void> {
    const settings = this._serverSettings;
    const url = URLExt.join(
      settings.baseUrl,
      'tinyagent-fs/approvals',
      proposal.id,
      'decision'
    );
    const body = {
      ...answer,
      proposal_hash: proposal.proposal_hash,
      session_id: proposal.session_id,
      surface: 'jupyter-sidebar'
    };
    const response = await ServerConnection.makeRequest(
      url,
      { method: 'POST', body: JSON.stringify(body) },
      settings
    );
    if (!response.ok) {
      const error = await ServerConnection.ResponseError.create(response);
      await this.refresh().catch(() => undefined);
      throw error;
    }
    this._answered.add(proposal.id);
    this._proposals = this._proposals.filter(p => p.id !== proposal.id);
    this._changed.emit();
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

  private async _fetch(): Promise<void> {
    const settings = this._serverSettings;
    const url = URLExt.join(settings.baseUrl, 'tinyagent-fs/approvals');
    try {
      const response = await ServerConnection.makeRequest(url, {}, settings);
      if (!response.ok) {
        throw await ServerConnection.ResponseError.create(response);
      }
      const body = (await response.json()) as { approvals: IProposal[] };
      const before = this._proposals.map(p => p.id).join();
      // A fetch sent before an answer landed still lists what was answered: it
      // stays gone, until the server no longer lists it either.
      const listed = new Set(body.approvals.map(p => p.id));
      for (const id of this._answered) {
        if (!listed.has(id)) {
          this._answered.delete(id);
        }
      }
      this._proposals = body.approvals.filter(p => !this._answered.has(p.id));
      const errorBefore = this._error;
      this._error = '';
      if (before !== this._proposals.map(p => p.id).join() || errorBefore) {
        this._changed.emit();
      }
    } catch (reason) {
      this._error = String(reason);
      this._changed.emit();
      throw reason; // the poll backs off
    }
  }

  private _onEmission(_: unknown, emission: Event.Emission): void {
    if (emission.schema_id !== APPROVAL_SCHEMA) {
      return;
    }
    if (!this._live) {
      this._live = true;
      this._poll.frequency = {
        ...this._poll.frequency,
        interval: this._pollInterval * LIVE_POLL_FACTOR
      };
    }
    this.refresh().catch(() => undefined);
  }

  private _changed = new Signal<this, void>(this);
  private _serverSettings: ServerConnection.ISettings;
  private _events: Event.IManager | null;
  private _answered = new Set<string>();
  private _poll: Poll;
  private _pollInterval: number;
  private _proposals: IProposal[] = [];
  private _error = '';
  private _live = false;
  private _pending: Promise<void> | null = null;
  private _again = false;
  private _isDisposed = false;
}

export namespace PendingModel {
  export interface IOptions {
    events?: Event.IManager | null;
    serverSettings?: ServerConnection.ISettings;
    /** Milliseconds between polls until the event bus has delivered. */
    pollInterval?: number;
  }
}
