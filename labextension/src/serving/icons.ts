import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="3" width="18" height="5" rx="1"/>
    <rect x="3" y="10" width="18" height="5" rx="1"/>
    <rect x="3" y="17" width="18" height="4" rx="1"/>
    <circle cx="6" cy="5.5" r="1" fill="#fff"/>
    <circle cx="6" cy="12.5" r="1" fill="#fff"/>
  </g>
</svg>`;

/** The Serving page's icon (a rack of servers). */
export const servingIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:serving',
  svgstr
});
