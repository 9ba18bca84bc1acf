/**
 * Undo from the sidebar: ask the toolkit that made a change to undo it. The
 * server only carries the request; the toolkit runs its own ``undo`` tool,
 * which asks for approval like any call (in the Pending section or on its
 * card). A toolkit that no longer runs is said so plainly, and nothing is undone.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { setVisibleText } from './format';
import { IAuditEvent } from './model';

const FOLLOW_MS = 500;

interface IUndoRequest {
  id: string;
  state: 'queued' | 'taken' | 'done' | 'failed';
  result: { ok: boolean; text: string; error_code: string | null } | null;
}

/** A button and a line of status, for an event whose change can be undone. */
export function undoControl(
  event: IAuditEvent,
  serverSettings: ServerConnection.ISettings,
  trans: TranslationBundle
): HTMLElement {
  const box = document.createElement('div');
  box.className = 'jp-TinyAgentFS-undo';
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'jp-mod-styled jp-TinyAgentFS-undoButton';
  button.textContent = trans.__('Undo this change…');
  const status = document.createElement('p');
  status.className = 'jp-TinyAgentFS-undoStatus';
  status.setAttribute('role', 'status');
  button.addEventListener('click', () => {
    button.disabled = true;
    void follow(event, serverSettings, trans, status).finally(() => {
      button.disabled = false;
    });
  });
  box.append(button, status);
  return box;
}

async function follow(
  event: IAuditEvent,
  settings: ServerConnection.ISettings,
  trans: TranslationBundle,
  status: HTMLElement
): Promise<void> {
  const say = (text: string, state: string) => {
    status.dataset.state = state;
    setVisibleText(status, text, true);
  };
  say(trans.__('Asking the toolkit that made this change…'), 'asking');
  const asked = await call(settings, 'undo-requests', {
    session_id: event.session_id,
    change_id: event.change_id,
    event_id: event.event_id
  });
  if (!asked.ok) {
    const gone = asked.body.code === 'TOOLKIT_GONE';
    say(
      gone
        ? trans.__(
            'Cannot undo: the toolkit that made this change is no longer running (or takes no undo requests). Nothing was undone.'
          )
        : trans.__('Cannot undo: %1', String(asked.body.message ?? '')),
      gone ? 'gone' : 'failed'
    );
    return;
  }
  let request = asked.body as unknown as IUndoRequest;
  say(
    trans.__(
      'The toolkit was asked; approve or deny its undo where it asks (Pending, or its card).'
    ),
    'waiting'
  );
  while (request.state === 'queued' || request.state === 'taken') {
    await new Promise(resolve => window.setTimeout(resolve, FOLLOW_MS));
    const next = await call(settings, `undo-requests/${request.id}`);
    if (!next.ok) {
      say(
        trans.__('Lost track of the undo: %1', String(next.body.message)),
        'failed'
      );
      return;
    }
    request = next.body as unknown as IUndoRequest;
  }
  const result = request.result;
  if (result?.error_code === 'TOOLKIT_GONE') {
    say(
      trans.__(
        'Cannot undo: the toolkit that made this change stopped before answering. Nothing was undone.'
      ),
      'gone'
    );
    return;
  }
  say(result?.text ?? '', request.state);
}

async function call(
  settings: ServerConnection.ISettings,
  path: string,
  body?: Record<string, unknown>
): Promise<{ ok: boolean; body: Record<string, unknown> }> {
  const url = URLExt.join(settings.baseUrl, 'tinyagent-fs', path);
  const init: RequestInit = body
    ? { method: 'POST', body: JSON.stringify(body) }
    : { method: 'GET' };
  const response = await ServerConnection.makeRequest(url, init, settings);
  let parsed: Record<string, unknown> = {};
  try {
    parsed = (await response.json()) as Record<string, unknown>;
  } catch {
    parsed = { message: response.statusText };
  }
  return { ok: response.ok, body: parsed };
}
