import { chatNote, completionBody, endpointOf, modelChoices, modelFor, titleFrom } from '../chat/model';
import { deltaOf, SseReader } from '../chat/sse';
import { IChat, IEndpointRef } from '../chat/types';

const EPS: IEndpointRef[] = [
  { id: 'a', name: 'chat', domain: 'acme', project: 'ml' },
  { id: 'b', name: 'chat', domain: 'acme', project: 'nlp' },
  { id: 'c', name: 'emb', domain: 'acme', project: 'ml' }
];

function chat(over: Partial<IChat> = {}): IChat {
  return {
    id: 'x', owner: 'bob', title: 't', endpoint: 'a', endpoint_name: 'chat',
    endpoint_gone: false, model: 'ml/chat', messages_count: 2, created_at: null,
    updated_at: null, ...over
  };
}

describe('the stream of a chat completion', () => {
  it('gives each event once it is complete, across chunks', () => {
    const r = new SseReader();
    expect(r.feed('data: {"a":')).toEqual([]);
    expect(r.feed('1}\n\ndata: [DO')).toEqual(['{"a":1}']);
    expect(r.feed('NE]\r\n\r\n')).toEqual(['[DONE]']);
    expect(r.feed(': a comment\n\n')).toEqual([]);
  });

  it('reads the text of each delta, the end, and errors', () => {
    expect(deltaOf('{"choices":[{"delta":{"content":"he"}}]}')).toEqual({ text: 'he', done: false });
    expect(deltaOf('{"choices":[{"delta":{"role":"assistant"}}]}')).toEqual({ text: '', done: false });
    expect(deltaOf('{"choices":[]}')).toEqual({ text: '', done: false });
    expect(deltaOf('[DONE]')).toEqual({ text: '', done: true });
    expect(deltaOf('{"error":{"message":"no replica"}}')).toEqual({ text: '', done: true, error: 'no replica' });
    expect(deltaOf('nonsense').error).toContain('not JSON');
  });
});

describe('the chat page rules', () => {
  it('titles a conversation by its first message, on one line', () => {
    expect(titleFrom('  hello\n  there ')).toBe('hello there');
    expect(titleFrom('')).toBe('New chat');
    const long = titleFrom('x'.repeat(100));
    expect(long.length).toBe(60);
    expect(long.endsWith('…')).toBe(true);
  });

  it('finds the endpoint a model id names, or none when it is not one', () => {
    expect(endpointOf('emb', EPS)).toBe('c');
    expect(endpointOf('chat', EPS)).toBeNull(); // two share the name
    expect(endpointOf('nlp/chat', EPS)).toBe('b');
    expect(endpointOf('acme/ml/chat', EPS)).toBe('a');
    expect(endpointOf('open', EPS)).toBeNull();
  });

  it('lists the gateway models with their endpoints', () => {
    expect(modelChoices({ data: [{ id: 'emb' }, { id: 5 }, { id: 'ml/chat' }] }, EPS)).toEqual([
      { id: 'emb', endpoint: 'c' }, { id: 'ml/chat', endpoint: 'a' }]);
    expect(modelChoices(null, EPS)).toEqual([]);
  });

  it('keeps a conversation on its model while it is offered', () => {
    const models = [{ id: 'emb', endpoint: 'c' }, { id: 'ml/chat', endpoint: 'a' }];
    expect(modelFor(chat(), models)).toBe('ml/chat');
    expect(modelFor(chat({ model: 'gone' }), models)).toBe('emb');
    expect(modelFor(null, [])).toBe('');
  });

  it('asks for a streamed completion of the messages as they are', () => {
    expect(completionBody('m', [{ role: 'user', content: '<b>x</b>' }])).toEqual({
      model: 'm', stream: true, messages: [{ role: 'user', content: '<b>x</b>' }] });
  });

  it('says where a conversation went, a deleted endpoint too', () => {
    expect(chatNote(chat())).toBe('ml/chat · 2 messages');
    expect(chatNote(chat({ endpoint_gone: true, messages_count: 1 }))).toBe('chat (deleted) · 1 message');
  });
});
