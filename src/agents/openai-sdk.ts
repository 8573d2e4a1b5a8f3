import type OpenAI from 'openai';

/*
 * The OpenAI SDK, loaded at the first model call rather than at every start: it is about a
 * tenth of a process's start, and a process whose scribes all use the builtin agent never
 * calls a model. `openAiSdk()` is for code that runs only once a call has been made (reading
 * its answer, wording its errors).
 */
let loading: Promise<typeof OpenAI> | undefined;
let loaded: typeof OpenAI | undefined;

export function loadOpenAiSdk(): Promise<typeof OpenAI> {
  loading ??= import('openai').then(({ default: sdk }) => (loaded = sdk));
  return loading;
}

export function openAiSdk(): typeof OpenAI {
  if (!loaded) throw new Error('the OpenAI SDK was used before loadOpenAiSdk() had loaded it');
  return loaded;
}
