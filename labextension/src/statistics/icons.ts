import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="3" y="13" width="4" height="8" rx="1"/>
    <rect x="10" y="7" width="4" height="14" rx="1"/>
    <rect x="17" y="3" width="4" height="18" rx="1"/>
  </g>
</svg>`;

/** The Statistics page's icon (three bars). */
export const statisticsIcon = new LabIcon({
  name: 'jupyterlab-hubgrid:statistics',
  svgstr
});
