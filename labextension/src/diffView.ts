/**
 * One audit event's diff in the main area, full width: unified or side by
 * side, syntax-coloured like the notebook card. The server renders it with the
 * card's renderer (escaped, hidden characters marked), so this page inserts no
 * HTML of its own making from the log; names are set as text.
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { setVisibleText, visible } from './format';
import { auditIcon } from './icon';

export type DiffMode = 'unified' | 'side-by-side';

/** What ``GET /tinyagent-fs/audit/<id>/diff`` answers. */
interface IRenderedDiff {
  event_id: string;
  tool: string;
  paths: string[];
  view: DiffMode;
  html: string;
  lines: number;
  css: string;
}

export class DiffView extends Widget {
  constructor(options: DiffView.IOptions) {
    super();
    this._options = options;
    this.addClass('jp-TinyAgentFS-diffView');
    const trans = options.trans;
    this._heading.className = 'jp-TinyAgentFS-diffHeading';
    const switcher = document.createElement('div');
    switcher.className = 'jp-TinyAgentFS-diffSwitch';
    switcher.setAttribute('role', 'group');
    switcher.setAttribute('aria-label', trans.__('Diff view'));
    for (const [mode, label] of [
      ['unified', trans.__('Unified')],
      ['side-by-side', trans.__('Side by side')]
    ] as [DiffMode, string][]) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'jp-mod-styled jp-TinyAgentFS-diffMode';
      button.dataset.view = mode;
      button.textContent = label;
      button.addEventListener('click', () => void this.showView(mode));
      this._buttons.push(button);
      switcher.append(button);
    }
    const bar = document.createElement('div');
    bar.className = 'jp-TinyAgentFS-diffBar';
    bar.append(this._heading, switcher, this._summary);
    this._body.className = 'jp-TinyAgentFS-diffBody';
    this.node.append(this._style, bar, this._body);
  }

  /** Fetch and show the diff in ``mode``; a failure is said in the view. */
  async showView(mode: DiffMode): Promise<void> {
    const trans = this._options.trans;
    for (const button of this._buttons) {
      button.setAttribute('aria-pressed', String(button.dataset.view === mode));
    }
    this.node.dataset.view = mode;
    this._summary.textContent = trans.__('Loading…');
    try {
      const rendered = await this._fetch(mode);
      if (this.node.dataset.view !== mode) {
        return; // switched again meanwhile
      }
      const names = rendered.paths.join(', ');
      setVisibleText(this._heading, `${rendered.tool} ${names}`.trim());
      this._summary.textContent = trans._n(
        '%1 diff line',
        '%1 diff lines',
        rendered.lines
      );
      this._style.textContent = rendered.css;
      this._body.innerHTML = rendered.html; // rendered and escaped by the server
      this.title.label = trans.__('Diff: %1', visible(names) || rendered.tool);
      this.title.caption = visible(`${rendered.tool} ${names}`);
    } catch (reason) {
      this._summary.textContent = '';
      const error = document.createElement('p');
      error.className = 'jp-TinyAgentFS-error';
      error.textContent = trans.__(
        'Could not load the diff: %1',
        String(reason)
      );
      this._body.replaceChildren(error);
    }
  }

  private async _fetch(mode: DiffMode): Promise<IRenderedDiff> {
    const { eventId, offset, serverSettings } = this._options;
    const url =
      URLExt.join(
        serverSettings.baseUrl,
        'tinyagent-fs/audit',
        encodeURIComponent(eventId),
        'diff'
      ) + URLExt.objectToQueryString({ view: mode, offset: String(offset) });
    const response = await ServerConnection.makeRequest(
      url,
      {},
      serverSettings
    );
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as IRenderedDiff;
  }

  private _options: DiffView.IOptions;
  private _style = document.createElement('style');
  private _heading = document.createElement('h2');
  private _summary = document.createElement('span');
  private _buttons: HTMLButtonElement[] = [];
  private _body = document.createElement('div');
}

export namespace DiffView {
  export interface IOptions {
    eventId: string;
    offset: number;
    serverSettings: ServerConnection.ISettings;
    trans: TranslationBundle;
  }
}

/** A main-area tab holding one event's diff, first shown unified. */
export function diffTab(options: DiffView.IOptions): MainAreaWidget<DiffView> {
  const content = new DiffView(options);
  content.title.icon = auditIcon;
  content.title.label = options.trans.__('Diff');
  const tab = new MainAreaWidget({ content });
  tab.id = `tinyagent-fs-diff-${options.eventId}`;
  tab.addClass('jp-TinyAgentFS-diffTab');
  void content.showView('unified');
  return tab;
}
