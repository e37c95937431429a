/**
 * The shape of one fio option's facts, as core/fio_option_table.ts (generated
 * by tools/fio_option_table.ts from fio's source) lists them.
 *
 * @module
 */

/** One option as fio declares it. */
export interface FioOptionFacts {
  readonly name: string;
  readonly alias?: string;
  /** fio's FIO_OPT_* type without the prefix: INT, BOOL, STR, STR_SET, STR_VAL, … */
  readonly type: string;
  readonly minval?: number;
  readonly maxval?: number;
  readonly pow2?: true;
  /** A time whose plain number means seconds (else microseconds). */
  readonly seconds?: true;
  /** A time (microseconds), not a size. */
  readonly time?: true;
  /** A bool stored negated (`buffered` sets `!direct`). */
  readonly neg?: true;
  readonly def?: string;
  /** The words a STR option takes. */
  readonly words?: readonly string[];
  /** How many per-direction slots (read, write, trim) a value fills. */
  readonly offs: number;
  /** fio checks or stores the value in a callback of its own. */
  readonly cb?: true;
  readonly help?: string;
  /** Only with this ioengine. */
  readonly engine?: string;
  /** A profile's option (accepted everywhere, used by that profile only). */
  readonly profile?: string;
}
