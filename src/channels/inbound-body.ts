import { BadRequestError } from '../http/errors.js';
import { messages as bodyMessages } from '../http/json-body.js';
import { ESCAPED_SURROGATE, wellFormedTexts } from '../lib/text.js';

/** A webhook's body as read: the fields it has (JSON object or form), and its text. */
export interface InboundBody {
  fields: Record<string, unknown> | null;
  /** Parsed JSON (of any shape), for the presets that look inside (Slack). */
  json: unknown;
  /** The whole body as text: what becomes the summary or message when no field says. */
  text: string;
}

/**
 * Reads a webhook body by its Content-Type: JSON (400 `Invalid JSON body` when it does not
 * parse), a form, or anything else as UTF-8 text. A form's whole text is its fields one per
 * line, so an agent reads `name: value` rather than percent-encoding.
 */
export function readInboundBody(raw: Buffer, contentType: string | undefined): InboundBody {
  const text = raw.toString('utf8');
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) {
    let json: unknown;
    try {
      json = JSON.parse(text);
      // Half an emoji escaped (`\ud800`) is stored as U+FFFD, as the API stores it.
      if (ESCAPED_SURROGATE.test(text)) json = wellFormedTexts(json);
    } catch {
      throw new BadRequestError(bodyMessages.invalidJson);
    }
    return { fields: isObject(json) ? json : null, json, text };
  }
  if (type === 'application/x-www-form-urlencoded') {
    const fields = Object.fromEntries(new URLSearchParams(text));
    return {
      fields,
      json: null,
      text: Object.entries(fields)
        .map(([name, value]) => `${name}: ${value}`)
        .join('\n'),
    };
  }
  return { fields: null, json: null, text };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The string field `name`, when the body has one. */
export function textField(body: InboundBody, name: string): string | undefined {
  const value = body.fields?.[name];
  return typeof value === 'string' ? value : undefined;
}
