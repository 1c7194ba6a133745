/**
 * Server-sent events of a streamed chat completion, read as they arrive:
 * pure, so the page and its tests share it.
 */

/** Splits a stream's text into events' `data` payloads, across chunk boundaries. */
export class SseReader {
  private buffer = '';

  /** The payloads of the events completed by `text` (a chunk as it came). */
  feed(text: string): string[] {
    this.buffer += text.replace(/\r\n?/g, '\n');
    const out: string[] = [];
    let end = this.buffer.indexOf('\n\n');
    while (end >= 0) {
      const event = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter(line => line.startsWith('data:'))
        .map(line => line.slice(5).replace(/^ /, ''));
      if (data.length) {
        out.push(data.join('\n'));
      }
      end = this.buffer.indexOf('\n\n');
    }
    return out;
  }
}

/** What one payload adds to the answer: its text, `done` at `[DONE]`, or the error it reports. */
export function deltaOf(payload: string): { text: string; done: boolean; error?: string } {
  if (payload.trim() === '[DONE]') {
    return { text: '', done: true };
  }
  let event: any;
  try {
    event = JSON.parse(payload);
  } catch {
    return { text: '', done: false, error: `the answer is not JSON: ${payload.slice(0, 200)}` };
  }
  if (event?.error) {
    return { text: '', done: true, error: String(event.error.message ?? event.error) };
  }
  const choice = Array.isArray(event?.choices) ? event.choices[0] : undefined;
  const text = choice?.delta?.content ?? choice?.text ?? '';
  return { text: typeof text === 'string' ? text : '', done: false };
}
