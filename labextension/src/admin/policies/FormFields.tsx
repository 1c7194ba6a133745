/**
 * The fields of a policy-like form (the Resource Policies page's, the
 * Domains page's edit forms): one input per field, named after its key,
 * with its label, hint and the service's 422 next to it; then the
 * problems of the request as a whole.
 */

import * as React from 'react';

import { Field, FieldError } from '../frame';
import { IPolicyField, PolicyDraft } from './form';

/** One field's input (checkbox, select or text), named after its key; also the Domains page's edit forms. */
export function Input(props: { f: IPolicyField; value: string | boolean; onChange: (v: string | boolean) => void }): JSX.Element {
  const { f } = props;
  if (f.kind === 'bool') {
    return <input type="checkbox" name={f.key} checked={props.value === true} onChange={e => props.onChange(e.target.checked)} />;
  }
  if (f.kind === 'operator') {
    return (
      <select className="jp-mod-styled" name={f.key} value={String(props.value)} onChange={e => props.onChange(e.target.value)}>
        <option value="and">and</option>
        <option value="or">or</option>
      </select>
    );
  }
  return (
    <input
      className="jp-mod-styled"
      name={f.key}
      value={String(props.value)}
      placeholder={f.clearable ? 'unlimited' : ''}
      onChange={e => props.onChange(e.target.value)}
    />
  );
}

/** Every field of `fields` with its input, changing `draft` through `onChange`. */
export function FormFields(props: {
  fields: IPolicyField[];
  draft: PolicyDraft;
  onChange: (draft: PolicyDraft) => void;
  errors: { [field: string]: string };
}): JSX.Element {
  const { draft, errors } = props;
  return (
    <>
      {props.fields.map(f => (
        <Field key={f.key} label={f.label} field={f.key} errors={errors} hint={f.hint}>
          <Input f={f} value={draft[f.key]} onChange={v => props.onChange({ ...draft, [f.key]: v })} />
        </Field>
      ))}
      <FieldError field="body" errors={errors} />
      <FieldError field="clear" errors={errors} />
    </>
  );
}
