/**
 * While something waits for the person: a status-bar badge and one JupyterLab
 * notification, both leading to the sidebar, both gone when nothing waits.
 */
import { Notification } from '@jupyterlab/apputils';
import { IStatusBar } from '@jupyterlab/statusbar';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { visible } from './format';
import { PendingModel } from './pending';

export function announcePending(options: {
  model: PendingModel;
  trans: TranslationBundle;
  statusBar: IStatusBar | null;
  open: () => void;
}): void {
  const { model, trans, statusBar, open } = options;
  if (statusBar) {
    const badge = new Widget({ node: document.createElement('button') });
    badge.addClass('jp-TinyAgentFS-pendingBadge');
    badge.node.setAttribute('type', 'button');
    badge.node.addEventListener('click', open);
    const update = (): void => {
      badge.node.textContent = trans._n(
        '%1 change awaits approval',
        '%1 changes await approval',
        model.count
      );
      badge.node.title = trans.__('Review in the agent audit sidebar');
    };
    model.changed.connect(update);
    update();
    statusBar.registerStatusItem('tinyagent-fs:pending', {
      item: badge,
      align: 'left',
      rank: 0,
      isActive: () => model.count > 0,
      activeStateChanged: model.changed
    });
  }
  // One notification, said again whenever the waiting set changes: an answered
  // call must not stay named in it; gone when nothing waits.
  let notification = '';
  let shown = new Set<string>();
  model.changed.connect(() => {
    const proposals = model.proposals;
    const fresh = proposals.some(p => !shown.has(p.id));
    if (!fresh && proposals.length === shown.size) {
      return;
    }
    shown = new Set(proposals.map(p => p.id));
    if (!proposals.length) {
      if (notification) {
        Notification.dismiss(notification);
        notification = '';
      }
      return;
    }
    const newest = proposals[proposals.length - 1]; // the server lists oldest first
    const message = visible(
      trans._n(
        'An agent waits for your approval: %2',
        '%1 agent changes wait for your approval; newest: %2',
        proposals.length,
        `${newest.tool} ${newest.paths.join(', ')}`.trim()
      )
    );
    const actions = [
      {
        label: trans.__('Review'),
        callback: open,
        displayType: 'accent' as const
      }
    ];
    const updated =
      notification !== '' &&
      Notification.update({
        id: notification,
        message,
        type: 'warning',
        actions,
        autoClose: false
      });
    if (!updated && fresh) {
      // none yet, or the person closed it: a new call is announced anew
      notification = Notification.warning(message, {
        autoClose: false,
        actions
      });
    }
  });
}
