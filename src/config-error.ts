/** A setting that cannot work, said in one line at start (entry points print it and exit 1). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
