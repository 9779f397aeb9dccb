/**
 * Text from a file as a message may quote it: control characters written as `\u001b`, so that a
 * hostile file cannot move the cursor or recolour the terminal, and at most `max` characters.
 */
export function printable(text: string, max = 80): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters escaped
  return cut.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
