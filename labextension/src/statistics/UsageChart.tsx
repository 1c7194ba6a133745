/**
 * One daily plot (Chart.js, stacked bars on a canvas: legend and tooltips
 * are drawn as text, never parsed as HTML). Only the pieces used are
 * registered, to keep the bundle small.
 */

import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  Tooltip,
  TooltipItem
} from 'chart.js';
import * as React from 'react';

import { dayTick, IPlotData, IPlotSpec } from './plot';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

/** Distinct colours that read on light and dark themes. */
const PALETTE = [
  '#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
  '#8c564b', '#e377c2', '#17becf', '#7f7f7f'
];

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

function chartData(plot: IPlotData) {
  return {
    labels: plot.labels,
    datasets: plot.datasets.map((d, i) => ({
      label: d.label,
      data: d.data,
      backgroundColor: PALETTE[i % PALETTE.length],
      // the exact strings, for the tooltip
      values: d.values
    }))
  };
}

export function UsageChart(props: { spec: IPlotSpec; plot: IPlotData }): JSX.Element {
  const { spec, plot } = props;
  const canvas = React.useRef<HTMLCanvasElement>(null);
  const chart = React.useRef<Chart<'bar'> | null>(null);

  React.useEffect(() => {
    if (!canvas.current) {
      return;
    }
    const text = cssVar('--jp-ui-font-color1', '#333');
    const grid = cssVar('--jp-border-color2', '#ddd');
    chart.current = new Chart(canvas.current, {
      type: 'bar',
      data: chartData(plot),
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        color: text,
        scales: {
          x: {
            stacked: true,
            grid: { color: grid },
            ticks: {
              color: text,
              // the UTC day of each bar (the tooltip names it in full)
              callback: function (this: any, value: string | number) {
                const days = this.chart.data.labels as string[];
                return dayTick(String(this.getLabelForValue(Number(value))), days);
              }
            }
          },
          y: {
            stacked: true,
            beginAtZero: true,
            grid: { color: grid },
            ticks: {
              color: text,
              precision: spec.figure === 'sessions' ? 0 : undefined,
              // plain decimals (0.00001, never 1.000000E-5); drawing only
              callback: (value: string | number) =>
                Number(value).toLocaleString(undefined, { maximumFractionDigits: 6 })
            }
          }
        },
        plugins: {
          legend: { position: 'bottom', labels: { color: text, boxWidth: 12 } },
          tooltip: {
            callbacks: {
              // the exact figure, not the float drawn
              label: (item: TooltipItem<'bar'>) => {
                const values = (item.dataset as unknown as { values: string[] }).values;
                return `${item.dataset.label}: ${values[item.dataIndex]}`;
              }
            }
          }
        }
      }
    });
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, []);

  React.useEffect(() => {
    if (chart.current) {
      chart.current.data = chartData(plot);
      chart.current.update('none');
    }
  }, [plot]);

  return (
    <figure className="jp-hubgrid-stats-plot" data-figure={spec.figure}>
      <figcaption title={spec.unit}>{spec.title}</figcaption>
      <div className="jp-hubgrid-stats-canvas">
        <canvas ref={canvas} role="img" aria-label={`${spec.title} per UTC day`} />
        {plot.empty && <p className="jp-hubgrid-stats-empty">Nothing used in this period</p>}
      </div>
    </figure>
  );
}
