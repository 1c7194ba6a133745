/**
 * The Data menu's dialogs (JupyterLab's Dialog): small forms built with
 * DOM text nodes and input values only — never HTML from strings.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

export interface IField {
  name: string;
  label: string;
  /** a select when given; a text input otherwise */
  options?: { value: string; label: string }[];
  value?: string;
  placeholder?: string;
}

/** A dialog body of labelled fields; its value: field name → text. */
export class FormBody extends Widget {
  constructor(fields: IField[], note?: string) {
    super();
    this.addClass('jp-hubgrid-form');
    if (note) {
      const p = document.createElement('p');
      p.className = 'jp-hubgrid-form-note';
      p.textContent = note;
      this.node.appendChild(p);
    }
    for (const field of fields) {
      const label = document.createElement('label');
      const caption = document.createElement('span');
      caption.textContent = field.label;
      label.appendChild(caption);
      let input: HTMLInputElement | HTMLSelectElement;
      if (field.options) {
        const select = document.createElement('select');
        select.className = 'jp-mod-styled';
        for (const o of field.options) {
          const option = document.createElement('option');
          option.value = o.value;
          option.textContent = o.label;
          select.appendChild(option);
        }
        input = select;
      } else {
        const text = document.createElement('input');
        text.type = 'text';
        text.className = 'jp-mod-styled';
        text.placeholder = field.placeholder ?? '';
        input = text;
      }
      input.name = field.name;
      if (field.value !== undefined) {
        input.value = field.value;
      }
      label.appendChild(input);
      this.node.appendChild(label);
      this._inputs.push(input);
    }
  }

  getValue(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const input of this._inputs) {
      out[input.name] = input.value;
    }
    return out;
  }

  protected onAfterAttach(): void {
    this._inputs[0]?.focus();
  }

  private _inputs: (HTMLInputElement | HTMLSelectElement)[] = [];
}

/** Ask for a form's values; null when cancelled. */
export async function askForm(
  title: string,
  fields: IField[],
  okLabel: string,
  note?: string
): Promise<Record<string, string> | null> {
  const result = await showDialog({
    title,
    body: new FormBody(fields, note),
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: okLabel })],
    focusNodeSelector: 'input, select'
  });
  return result.button.accept ? (result.value as Record<string, string>) : null;
}

/** Ask to confirm; `danger` shows a warning button. */
export async function confirm(
  title: string,
  text: string,
  okLabel: string,
  danger = false
): Promise<boolean> {
  const body = document.createElement('p');
  body.textContent = text;
  const result = await showDialog({
    title,
    body: new Widget({ node: body }),
    buttons: [
      Dialog.cancelButton(),
      danger
        ? Dialog.warnButton({ label: okLabel })
        : Dialog.okButton({ label: okLabel })
    ]
  });
  return result.button.accept;
}
