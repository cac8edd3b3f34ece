/**
 * Text from a model, a scenario file or an error quoting either, made safe to print on an
 * operator's terminal: every character that could drive the terminal (ESC and so every escape
 * sequence, the other C0 controls but newline and tab, DEL, the C1 controls) or reorder what the
 * operator reads (the bidirectional embeddings, overrides and isolates) is written out as a visible
 * escape, so a model cannot clear the screen, retitle the window or disguise its words. JSON output
 * needs none of this: JSON escapes control characters itself.
 */
const UNSAFE_FOR_TERMINAL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function visibleEscape(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

export function terminalSafe(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINAL, visibleEscape);
}
