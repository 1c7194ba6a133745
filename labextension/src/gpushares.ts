/**
 * How a node enforces GPU shares, and a share's memory cap, as text (pure):
 * one wording for the Summary's GPU map, the admin GPU maps and a session's
 * detail. From a node's (or a session's) `shares` model: `mode` (mps, hami,
 * framework; "" not said), `enforced` (its mode can hold shares now),
 * `reason` (why not), `not_enforced_allowed` (an admin's "shares not
 * enforced" mark), `declared` (GPUs declared in configuration, none found by
 * the driver: nothing holds a share there), and a share's `memory` (bytes
 * it may use; 0 unknown).
 * Sizes exact in binary units (formatBytes).
 */

import { formatBytes } from './amounts';

export interface INodeShares {
  mode?: string;
  enforced: boolean;
  reason?: string;
  not_enforced_allowed?: boolean;
  taken?: boolean;
  declared?: boolean;
}

export interface ISharesLine {
  /** mps, hami, framework, or '' */
  mode: string;
  /** 'enforced', 'not-enforced' (an admin's mark: shares go there anyway), 'refused' (takes no shares) */
  state: 'enforced' | 'not-enforced' | 'refused';
  text: string;
}

const MODES: Record<string, string> = {
  mps: 'MPS',
  hami: 'HAMi-core',
  framework: 'framework caps'
};

export function modeText(mode?: string): string {
  return mode ? `GPU sharing: ${MODES[mode] ?? mode}` : 'GPU sharing: mode not said';
}

/** The node's sharing line; null when the service says nothing (no `shares`). */
export function sharesLine(shares?: INodeShares | null): ISharesLine | null {
  if (!shares) {
    return null;
  }
  const mode = shares.mode ?? '';
  const head = modeText(mode);
  const why = shares.reason ? ` (${shares.reason})` : '';
  if (shares.enforced && shares.declared) {
    // configured GPUs with no device behind them: shares are counted, nothing enforces them
    return { mode, state: 'enforced', text: `${head}, declared (no device)` };
  }
  if (shares.enforced) {
    return { mode, state: 'enforced', text: `${head}, shares enforced` };
  }
  if (shares.not_enforced_allowed) {
    return { mode, state: 'not-enforced', text: `${head}, shares not enforced${why}` };
  }
  return { mode, state: 'refused', text: `${head}, takes no shares now${why}` };
}

/** "memory cap 40 GiB" for a share's bytes; '' when unknown (0, missing). */
export function memoryCap(memory?: number | string | null): string {
  const bytes = memory === undefined || memory === null ? '0' : String(memory);
  return bytes === '0' ? '' : `memory cap ${formatBytes(bytes)}`;
}

/** One allocated GPU: "GPU 3: 0.5, memory cap 40 GiB", or "GPU 0: whole". */
export function gpuShareText(g: { index: number; share: string | number; memory?: number | string }): string {
  const share = String(g.share);
  if (share === '1') {
    return `GPU ${g.index}: whole`;
  }
  const cap = memoryCap(g.memory);
  return `GPU ${g.index}: ${share}${cap ? `, ${cap}` : ''}`;
}
