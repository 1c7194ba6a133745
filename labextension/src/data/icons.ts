import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <ellipse cx="12" cy="5" rx="8" ry="3"/>
    <path d="M4 7v4c0 1.7 3.6 3 8 3s8-1.3 8-3V7c0 1.7-3.6 3-8 3S4 8.7 4 7z"/>
    <path d="M4 13v4c0 1.7 3.6 3 8 3s8-1.3 8-3v-4c0 1.7-3.6 3-8 3s-8-1.3-8-3z" fill-opacity="0.6"/>
  </g>
</svg>`;

/** The Data menu's sidebar icon (stacked storage). */
export const dataIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:data',
  svgstr
});
