import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="3" width="8" height="8" rx="1"/>
    <rect x="13" y="3" width="8" height="8" rx="1"/>
    <rect x="3" y="13" width="8" height="8" rx="1"/>
    <rect x="13" y="13" width="8" height="8" rx="1" fill-opacity="0.5"/>
  </g>
</svg>`;

/** The hubgrid sidebar icon (a grid of four nodes). */
export const hubgridIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:hubgrid',
  svgstr
});
