import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M4 4h16l-1.5 5h-13z"/>
    <rect x="5" y="10" width="14" height="10" rx="1"/>
  </g>
</svg>`;

/** The Model Store page's icon (a shop front). */
export const modelStoreIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:model-store',
  svgstr
});
