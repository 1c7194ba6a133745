import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="2" y="4" width="20" height="16" rx="2" fill-opacity="0.35"/>
    <path d="M9 8.5v7l6-3.5z"/>
  </g>
</svg>`;

/** The Sessions menu's sidebar icon (a session window with a start mark). */
export const sessionsIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:sessions',
  svgstr
});
