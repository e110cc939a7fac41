/** Reading Server-Sent Events in tests. */

export interface SseFrame<Data = unknown> {
  id: number | undefined;
  event: string;
  data: Data;
}

/** Reads an SSE response frame by frame; `until` waits for a frame (by count of reads, not time). */
export function readSse<Data = unknown>(response: Response) {
  const frames: Array<SseFrame<Data>> = [];
  const waiters: Array<() => void> = [];
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let ended = false;
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) {
        ended = true;
        for (const w of waiters.splice(0)) w();
        return;
      }
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((l) => !l.startsWith(':') && l.includes(':'))
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
        ) as Record<string, string>;
        if (fields['data'] !== undefined) {
          frames.push({
            id: fields['id'] !== undefined ? Number(fields['id']) : undefined,
            event: fields['event'] ?? 'message',
            data: JSON.parse(fields['data']) as Data,
          });
        }
        end = buffer.indexOf('\n\n');
      }
      for (const w of waiters.splice(0)) w();
    }
  })();
  return {
    frames,
    /** Resolves with the first frame matching `predicate`; rejects if the stream ends first. */
    async until(predicate: (frame: SseFrame<Data>) => boolean): Promise<SseFrame<Data>> {
      for (;;) {
        const found = frames.find(predicate);
        if (found) return found;
        if (ended) throw new Error('the stream ended before the frame came');
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    close: () => reader.cancel().catch(() => undefined),
  };
}
