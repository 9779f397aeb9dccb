/**
 * Switches for measuring each piece of the SQLite write path's machinery with and without it in the
 * same run (`bun run bench -- machinery`, bench/parts/machinery/). CATALOGUE_WITHOUT lists the pieces
 * to leave out, separated by commas; unset, as the service always runs, nothing changes. Not a
 * setting for operators: it is in no --help, and what it leaves out is slower.
 */
export const machineryPieces = ['wal-flush', 'checkpointer', 'group-commit'] as const
export type MachineryPiece = (typeof machineryPieces)[number]

export const WITHOUT_ENV = 'CATALOGUE_WITHOUT'

const leftOut = new Set((process.env[WITHOUT_ENV] ?? '').split(',').map((piece) => piece.trim()))

/** Whether CATALOGUE_WITHOUT leaves `piece` out of this process. */
export function without(piece: MachineryPiece): boolean {
  return leftOut.has(piece)
}
