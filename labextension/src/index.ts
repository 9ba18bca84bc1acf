/**
 * tinyagent-fs: a sidebar that shows, live, every file tool call an agent made
 * from a kernel of this server, as the server extension reads it from the
 * audit log.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { DiffView, diffTab } from './diffView';
import { AuditModel, IAuditSummary } from './model';
import { AuditPanel } from './panel';
import { PendingModel } from './pending';
import { announcePending } from './pendingStatus';
import { PendingSection } from './pendingView';

const PLUGIN_ID = 'tinyagent-fs:plugin';

namespace CommandIDs {
  export const open = 'tinyagent-fs:open-audit-log';
  export const refresh = 'tinyagent-fs:refresh-audit-log';
  export const openDiff = 'tinyagent-fs:open-diff';
}

interface ISettings {
  area: 'left' | 'right';
  openOnStart: boolean;
  pollInterval: number;
  pageSize: number;
  maxEvents: number;
}

const DEFAULTS: ISettings = {
  area: 'right',
  openOnStart: false,
  pollInterval: 1000,
  pageSize: 100,
  maxEvents: 1000
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A live audit log of the file tool calls agents made.',
  autoStart: true,
  optional: [
    ITranslator,
    ILayoutRestorer,
    ICommandPalette,
    ISettingRegistry,
    IStatusBar
  ],
  activate: async (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    registry: ISettingRegistry | null,
    statusBar: IStatusBar | null
  ): Promise<void> => {
    const trans = (translator ?? nullTranslator).load('tinyagent_fs');
    const settings = await loadSettings(registry);
    const model = new AuditModel({
      events: app.serviceManager.events,
      serverSettings: app.serviceManager.serverSettings,
      pageSize: settings.pageSize,
      maxEvents: settings.maxEvents,
      pollInterval: settings.pollInterval
    });
    const diffs = new Map<string, MainAreaWidget<DiffView>>();
    app.commands.addCommand(CommandIDs.openDiff, {
      label: trans.__('Open Diff Full Width'),
      caption: trans.__("Show an audit event's diff in the main area"),
      execute: args => {
        const eventId = String(args.eventId ?? '');
        let tab = diffs.get(eventId);
        if (!tab || tab.isDisposed) {
          tab = diffTab({
            eventId,
            offset: Number(args.offset ?? -1),
            serverSettings: app.serviceManager.serverSettings,
            trans
          });
          diffs.set(eventId, tab);
          tab.disposed.connect(() => diffs.delete(eventId));
          app.shell.add(tab, 'main');
        }
        app.shell.activateById(tab.id);
      }
    });
    const panel = new AuditPanel({
      model,
      trans,
      serverSettings: app.serviceManager.serverSettings,
      openDiff: (event: IAuditSummary) =>
        void app.commands.execute(CommandIDs.openDiff, {
          eventId: event.event_id,
          offset: event.offset
        })
    });
    // Proposals waiting for the person sit above the log, in the same sidebar.
    const pending = new PendingModel({
      events: app.serviceManager.events,
      serverSettings: app.serviceManager.serverSettings
    });
    const section = new PendingSection({ model: pending, trans });
    panel.node.insertBefore(section.node, panel.node.children[1] ?? null);
    announcePending({
      model: pending,
      trans,
      statusBar,
      open: () => app.shell.activateById(panel.id)
    });
    app.shell.add(panel, settings.area, { rank: 900 });
    if (restorer) {
      restorer.add(panel, 'tinyagent-fs-audit');
    }

    const category = trans.__('Agent File Tools');
    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Show Agent Audit Log'),
      caption: trans.__(
        'Open the sidebar that lists the tool calls agents made'
      ),
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: trans.__('Reload Agent Audit Log'),
      execute: () => model.reload()
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.open, category });
      palette.addItem({ command: CommandIDs.refresh, category });
    }

    await Promise.all([model.start(), pending.start()]);
    if (settings.openOnStart) {
      void app.restored.then(() => app.shell.activateById(panel.id));
    }
  }
};

async function loadSettings(
  registry: ISettingRegistry | null
): Promise<ISettings> {
  if (!registry) {
    return DEFAULTS;
  }
  try {
    const loaded = await registry.load(PLUGIN_ID);
    return { ...DEFAULTS, ...(loaded.composite as Partial<ISettings>) };
  } catch (reason) {
    console.warn(`${PLUGIN_ID}: settings could not be loaded`, reason);
    return DEFAULTS;
  }
}

export default plugin;
