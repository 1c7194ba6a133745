/**
 * How the Serving page says to call an endpoint from this Lab, pure (no DOM,
 * no calls): the OpenAI base URL its notebooks and terminals reach the
 * gateway at (the server's `hubgrid/gateway-info`: a Docker session reaches
 * the hub only through its relay, at an URL the browser's origin is not),
 * and a copyable openai snippet.
 */

/** What this Lab's server says of the gateway (`hubgrid/gateway-info`). */
export interface IGatewayInfo {
  /** its root as this server (and its kernels and terminals) reach it */
  gateway_url: string | null;
  openai_base_url: string | null;
  /** the variable holding the hub token the gateway takes (null: none) */
  token_variable: string | null;
}

/** The OpenAI base URL from this Lab's notebooks, or null when the server does not know it. */
export function labOpenAIBase(info: IGatewayInfo | null): string | null {
  return info?.openai_base_url || null;
}

/** `s` as a Python string literal (JSON's escapes are Python's too). */
function py(s: string): string {
  return JSON.stringify(s);
}

/**
 * Python that calls `model` at `baseUrl` with the openai client: with the
 * session's hub token from `tokenVariable`, else with an endpoint token to
 * paste (the server has no hub token).
 */
export function openaiSnippet(baseUrl: string, model: string, tokenVariable: string | null): string {
  const key = tokenVariable ? `os.environ[${py(tokenVariable)}]` : '"hge_..."  # an endpoint token: New token';
  return [
    'import os',
    'from openai import OpenAI',
    `client = OpenAI(base_url=${py(baseUrl)},`,
    `                api_key=${key})`,
    `answer = client.chat.completions.create(model=${py(model)},`,
    '    messages=[{"role": "user", "content": "hello"}])',
    'print(answer.choices[0].message.content)'
  ].join('\n');
}
