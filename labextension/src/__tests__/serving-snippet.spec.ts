import { labOpenAIBase, openaiSnippet } from '../serving/callsnippet';

const RELAYED = 'http://127.0.0.1:8081/services/hubgrid-gateway/';

describe('calling an endpoint from this Lab', () => {
  it("takes the server's own base URL, and none when it does not know one", () => {
    const info = { gateway_url: RELAYED, openai_base_url: `${RELAYED}v1`, token_variable: 'JUPYTERHUB_API_TOKEN' };
    expect(labOpenAIBase(info)).toBe(`${RELAYED}v1`);
    expect(labOpenAIBase({ ...info, gateway_url: null, openai_base_url: null })).toBeNull();
    expect(labOpenAIBase(null)).toBeNull();
  });

  it('writes an openai call with the hub token by its variable, never a value', () => {
    const code = openaiSnippet(`${RELAYED}v1`, 'echo', 'JUPYTERHUB_API_TOKEN');
    expect(code.split('\n')).toEqual([
      'import os',
      'from openai import OpenAI',
      `client = OpenAI(base_url="${RELAYED}v1",`,
      '                api_key=os.environ["JUPYTERHUB_API_TOKEN"])',
      'answer = client.chat.completions.create(model="echo",',
      '    messages=[{"role": "user", "content": "hello"}])',
      'print(answer.choices[0].message.content)'
    ]);
  });

  it('asks for an endpoint token where the server has no hub token', () => {
    expect(openaiSnippet('http://h/v1', 'm', null)).toContain('api_key="hge_..."  # an endpoint token');
  });

  it('quotes a name so that it stays one Python string', () => {
    const code = openaiSnippet('http://h/v1', 'a"b\\c\nd', 'T');
    expect(code).toContain('model="a\\"b\\\\c\\nd"');
    expect(code.split('\n')).toHaveLength(7);
  });
});
