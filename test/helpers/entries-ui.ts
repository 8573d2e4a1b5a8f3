import type { FieldInput } from '../../src/entries/entry-type-service.js';

/** A type with a field of each scalar kind and a long text, as the console's entries pages are tested with. */
export const COMPANY_FIELDS: FieldInput[] = [
  { name: 'Name', type: 'text', primary: true },
  { name: 'Employees', type: 'number' },
  { name: 'Public', type: 'boolean' },
  { name: 'Founded', type: 'date' },
  { name: 'Notes', type: 'text' },
];
