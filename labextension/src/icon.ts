import { LabIcon } from '@jupyterlab/ui-components';

/** A shield with a tick: the calls an agent made, checked and kept. */
const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M12 2 4 5v6c0 5.1 3.4 9.8 8 11 4.6-1.2 8-5.9 8-11V5l-8-3zm-1.2 14.2-3.9-3.9 1.4-1.4 2.5 2.5 5.1-5.1 1.4 1.4-6.5 6.5z"/>
</svg>`;

export const auditIcon = new LabIcon({
  name: 'tinyagent-fs:audit',
  svgstr: SVG
});
