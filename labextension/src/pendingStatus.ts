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
  let notification = '';
  let seen = new Set<string>();
  model.changed.connect(() => {
    const ids = new Set(model.proposals.map(p => p.id));
    const fresh = model.proposals.filter(p => !seen.has(p.id));
    seen = ids;
    if (!ids.size) {
      if (notification) {
        Notification.dismiss(notification);
        notification = '';
      }
      return;
    }
    if (!fresh.length && notification) {
      return;
    }
    const newest = fresh[fresh.length - 1] ?? model.proposals[0];
    const message = visible(
      trans._n(
        'An agent waits for your approval: %2',
        '%1 agent changes wait for your approval; newest: %2',
        ids.size,
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
    if (notification) {
      Notification.update({
        id: notification,
        message,
        type: 'warning',
        actions,
        autoClose: false
      });
    } else {
      notification = Notification.warning(message, {
        autoClose: false,
        actions
      });
    }
  });
}
