import ejs from 'ejs';
import { VIEWS_DIR } from '../lib/paths.js';

/**
 * The console's view engine: EJS, with includes written from the views' root
 * (`include('/partials/time')`), which EJS resolves without looking on disk; it looks for a
 * relative include on disk at every render, once per table row. `cache` compiles each template
 * once, at its first render.
 */
export function viewEngine(cache: boolean) {
  return (file: string, data: object, done: (err: unknown, html?: string) => void): void => {
    ejs.renderFile(file, data, { root: VIEWS_DIR, cache }, done);
  };
}
