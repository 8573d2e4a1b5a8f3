import { ValidationError } from './errors.js';

/** The longest name of what staff and operators name (scribes, entry types, organizations, API keys): their columns' size. */
export const MAX_NAME = 200;

export const messages = {
  nameRequired: 'Name is required',
  nameTooLong: `Name must be at most ${MAX_NAME} characters`,
};

/** A name as given, trimmed: 422 when blank or longer than MAX_NAME. */
export function checkedName(text: string): string {
  const name = text.trim();
  if (!name) throw new ValidationError(messages.nameRequired);
  if (name.length > MAX_NAME) throw new ValidationError(messages.nameTooLong);
  return name;
}
