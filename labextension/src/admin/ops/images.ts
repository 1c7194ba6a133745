/**
 * The Images page's pure parts: an image's name and tag, its minimum
 * resources and apps as text, the edit form <-> PATCH images/{name} body
 * (only what changed), and a scan's result as lines.
 */

import { bytesText, parseBytes } from '../../amounts';
import { IImage, IScanResult, IServicePort, SlotMap } from './types';

/** "repo/path:tag" -> {name: "repo/path", tag: "tag"} (a registry's "host:port/x" kept whole). */
export function nameAndTag(full: string): { name: string; tag: string } {
  const slash = full.lastIndexOf('/');
  const colon = full.lastIndexOf(':');
  if (colon > slash) {
    return { name: full.slice(0, colon), tag: full.slice(colon + 1) };
  }
  return { name: full, tag: '' };
}

/** "cpu=1, mem=1 GiB" (the form's text of min_slots: memory in binary units when exact). */
export function slotsToText(slots: SlotMap | null | undefined): string {
  return Object.entries(slots ?? {})
    .map(([k, v]) => `${k}=${k === 'mem' ? bytesText(String(v)) : v}`)
    .join(', ');
}

/** "jupyterlab:http:lab, terminal:http:lab/terminals/1" */
export function portsToText(ports: IServicePort[] | null | undefined): string {
  return (ports ?? []).map(p => `${p.name}:${p.protocol}:${p.path}`).join(', ');
}

function items(text: string): string[] {
  return text
    .split(',')
    .map(s => s.trim())
    .filter(s => s.length > 0);
}

export function textToSlots(text: string): SlotMap {
  const out: SlotMap = {};
  for (const item of items(text)) {
    const eq = item.indexOf('=');
    if (eq <= 0) {
      throw new Error(`minimum resources: "${item}" is not slot=amount`);
    }
    const slot = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    try {
      out[slot] = slot === 'mem' ? parseBytes(value).toString() : value;
    } catch (e) {
      throw new Error(`minimum resources: mem: ${(e as Error).message}`);
    }
  }
  return out;
}

export function textToPorts(text: string): IServicePort[] {
  return items(text).map(item => {
    const [name, protocol, ...path] = item.split(':');
    if (!name || !protocol || path.length === 0) {
      throw new Error(`apps: "${item}" is not name:protocol:path`);
    }
    return { name: name.trim(), protocol: protocol.trim(), path: path.join(':').trim() };
  });
}

export interface IImageForm {
  minSlots: string;
  ports: string;
  domains: string;
}

export function imageForm(img: IImage): IImageForm {
  return {
    minSlots: slotsToText(img.min_slots),
    ports: portsToText(img.service_ports),
    domains: (img.domains ?? []).join(', ')
  };
}

/** The PATCH body: the fields whose text changed (throws on a malformed field). */
export function imageChange(img: IImage, form: IImageForm): object {
  const before = imageForm(img);
  const change: { [k: string]: unknown } = {};
  if (form.minSlots.trim() !== before.minSlots) {
    change.min_slots = textToSlots(form.minSlots);
  }
  if (form.ports.trim() !== before.ports) {
    change.service_ports = textToPorts(form.ports);
  }
  if (form.domains.trim() !== before.domains) {
    change.domains = items(form.domains);
  }
  return change;
}

/** A scan's result for people: a summary line, then each failed host and skipped image. */
export function scanLines(r: IScanResult): string[] {
  const lines = [
    `${r.hosts.length} host(s): added ${r.added.length}, updated ${r.updated.length}, ` +
      `unchanged ${r.unchanged.length}, skipped ${r.skipped.length}`
  ];
  for (const h of r.hosts) {
    lines.push(h.ok ? `${h.url}: ${h.images ?? 0} image(s)` : `${h.url}: failed: ${h.error ?? ''}`);
  }
  for (const name of r.added) {
    lines.push(`added ${name}`);
  }
  for (const name of r.updated) {
    lines.push(`updated ${name}`);
  }
  for (const s of r.skipped) {
    lines.push(`skipped ${s.name}: ${s.reason}`);
  }
  return lines;
}
