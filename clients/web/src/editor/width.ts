// How many columns a character takes on screen, counted as terminals (and
// the terminal client, through wcwidth) count them: two for East Asian wide
// and fullwidth characters and for emoji shown as pictures, none for
// combining marks, joiners and variation selectors, one for the rest.

/** [first, last] code points of the East Asian wide and fullwidth blocks, ascending. */
const WIDE: readonly [number, number][] = [
  [0x1100, 0x115f], [0x2e80, 0x303e], [0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff],
  [0xa000, 0xa4cf], [0xa960, 0xa97f], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe10, 0xfe19],
  [0xfe30, 0xfe6f], [0xff00, 0xff60], [0xffe0, 0xffe6], [0x16fe0, 0x16fe4], [0x17000, 0x18cff],
  [0x1b000, 0x1b2ff], [0x1f200, 0x1f2ff], [0x20000, 0x2fffd], [0x30000, 0x3fffd],
];
const ZERO = /[\p{Mn}\p{Me}\u1160-\u11ff\u200b-\u200f\u2060-\u2064\ufe00-\ufe0f\ufeff]/u;
const PICTURE = /\p{Emoji_Presentation}/u;

/** Whether a line may hold a character that is not one column wide (a tab included): the common line needs no map. */
export const MAY_NOT_BE_ONE_COLUMN = /[\t\u0300-\uffff]/;

export function cellWidth(cp: number): 0 | 1 | 2 {
  if (cp < 0x300) return 1;
  let lo = 0, hi = WIDE.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < WIDE[mid][0]) hi = mid - 1;
    else if (cp > WIDE[mid][1]) lo = mid + 1;
    else return 2;
  }
  const ch = String.fromCodePoint(cp);
  if (ZERO.test(ch)) return 0;
  return PICTURE.test(ch) ? 2 : 1;
}
