import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="4" width="18" height="3" rx="1" fill-opacity="0.4"/>
    <rect x="3" y="4" width="12" height="3" rx="1"/>
    <rect x="3" y="10.5" width="18" height="3" rx="1" fill-opacity="0.4"/>
    <rect x="3" y="10.5" width="6" height="3" rx="1"/>
    <rect x="3" y="17" width="18" height="3" rx="1" fill-opacity="0.4"/>
    <rect x="3" y="17" width="15" height="3" rx="1"/>
  </g>
</svg>`;

/** The Summary menu's sidebar icon (three quota bars). */
export const summaryIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:summary',
  svgstr
});
