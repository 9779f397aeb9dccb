/**
 * A character that shows: anything but white space, controls (NUL included), format characters
 * (zero-width spaces and joiners, the BOM, the soft hyphen), default-ignorable ones (the Hangul
 * fillers, variation selectors) and the blank Braille pattern U+2800, drawn as nothing. Combining
 * marks are drawn, so a name of marks alone holds a visible character.
 */
export const visibleCharacter = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]/u

/**
 * `visibleCharacter` as a JSON Schema pattern, for the OpenAPI document: the same set written out as
 * `\uXXXX` ranges, since `\p{...}` needs the `u` flag that TypeBox and many generators do not give
 * patterns (test/jsonapi/visible-text.test.ts checks that both agree). Only the Basic Multilingual
 * Plane is listed and surrogates count as visible, so a name made only of the rare invisible
 * characters beyond it (tag characters) fits the pattern and is still refused.
 */
export const visibleTextPattern =
  '[^\\u0000-\\u0020\\u007f-\\u00a0\\u00ad\\u034f\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890-\\u0891\\u08e2\\u115f-\\u1160\\u1680\\u17b4-\\u17b5\\u180b-\\u180f\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u2800\\u3000\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufffb]'
