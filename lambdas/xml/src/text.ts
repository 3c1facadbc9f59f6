/** Values written into XML the service builds: escaped text and attributes, and xs:dateTime. */

/** Text or an attribute value with `&`, `<`, `>` and `"` escaped. */
export function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** xs:dateTime in UTC, without fractions of a second. */
export function xmlDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
