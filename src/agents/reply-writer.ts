/** How often, at most, the text of an answer under way is stored: readers are this far behind, plus one write. */
export const DRAFT_FLUSH_MS = 250;

/**
 * Where an agent writes the text of its answer while the model writes it, so that it is
 * readable before it is whole. Only the answer's own text: not a tool call's arguments.
 */
export interface AnswerDraft {
  /** More text of the answer. */
  write(delta: string): void;
  /** What was written is not the answer after all (the model went on to call tools, or the call is made again). */
  discard(): void;
}

/** A run's draft, as the runtime holds it. */
export interface ReplyWriter extends AnswerDraft {
  /** Stops storing and waits for a write under way; after it, the stored draft is as last saved. */
  close(): Promise<void>;
}

export interface ReplyWriterOptions {
  /**
   * Stores the whole text so far as the answer under way ('' removes it), if the run still
   * holds its claim; false when it does not, and the writer then stores nothing more.
   */
  save: (text: string) => Promise<boolean>;
  /** Told each text stored, once it is (readers that follow the answer hook in here). */
  onSaved?: (text: string) => void;
  /** A store that failed: the writer goes on and tries again with the next text. */
  onError: (err: unknown) => void;
  everyMs?: number;
}

/**
 * The one place an answer under way is stored. It buffers the model's text and stores the
 * whole of it at most every `everyMs` (the first text `everyMs` after it came), one write at
 * a time, so a model writing a token at a time costs a few writes a second, not one a token.
 */
export function createReplyWriter({ save, onSaved, onError, everyMs = DRAFT_FLUSH_MS }: ReplyWriterOptions): ReplyWriter {
  let text = '';
  /** What the store holds. */
  let saved = '';
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let saving: Promise<void> | undefined;
  let lastSaveAt: number | undefined;
  // The answer is stored trimmed, as it is recorded, so what readers see is always a prefix of
  // it and the deltas add up to it: blanks at its end wait for the text that follows them.
  const shown = () => text.trim();

  function schedule(): void {
    if (closed || timer || saving || shown() === saved) return;
    // The first text waits too: an answer that comes whole within `everyMs` of its first
    // text (a short reply, streamed at once) is recorded without a draft before it.
    lastSaveAt ??= performance.now();
    const wait = Math.max(0, lastSaveAt + everyMs - performance.now());
    timer = setTimeout(() => {
      timer = undefined;
      saving = store().finally(() => {
        saving = undefined;
        schedule();
      });
    }, wait);
  }

  async function store(): Promise<void> {
    const next = shown();
    lastSaveAt = performance.now();
    try {
      if (!(await save(next))) {
        closed = true;
        return;
      }
      saved = next;
      onSaved?.(next);
    } catch (err) {
      onError(err);
    }
  }

  return {
    write(delta) {
      if (closed) return;
      text += delta;
      schedule();
    },
    discard() {
      if (closed) return;
      text = '';
      schedule();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await saving;
    },
  };
}
