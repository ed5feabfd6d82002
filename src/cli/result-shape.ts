/**
 * The shape of a value an operator gives `resolve`, beside the shapes of what
 * the same activity type returned before: the workflow receives exactly the
 * value given, so a vendor's record where the activity returns its own object
 * (`{ id }` where the code reads `chargeId`) finishes the workflow with a wrong
 * answer. A shape is the value's structure (object keys, element kinds, types),
 * never its contents: it is printed, and a result may hold personal data.
 */

export type Shape =
  | 'null'
  | 'string'
  | 'number'
  | 'boolean'
  | 'bytes'
  | 'undefined'
  | { readonly array: readonly Shape[] }
  | { readonly object: Readonly<Record<string, Shape>> };

/** Deeper than this, a value's shape is not followed: two results differ long before. */
const MAX_DEPTH = 8;

export function shapeOf(value: unknown, depth = 0): Shape {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return typeof value as Shape;
  if (depth >= MAX_DEPTH) return 'null';
  if (Array.isArray(value)) {
    const elements: Shape[] = [];
    for (const item of value) {
      const shape = shapeOf(item, depth + 1);
      if (!elements.some((known) => shapeText(known) === shapeText(shape))) elements.push(shape);
    }
    return { array: elements };
  }
  if (typeof value === 'object') {
    const object: Record<string, Shape> = Object.create(null) as Record<string, Shape>;
    for (const key of Object.keys(value).sort()) object[key] = shapeOf((value as Record<string, unknown>)[key], depth + 1);
    return { object };
  }
  return 'null';
}

/**
 * Whether a value of shape `given` could be what the activity returned, judging by one result of shape
 * `known`: objects with the same keys, whose values fit; arrays whose elements fit some known element;
 * the same primitive type. `null` fits anything and anything fits it: an optional field is often null.
 */
export function fits(given: Shape, known: Shape): boolean {
  if (given === 'null' || known === 'null') return true;
  if (typeof given === 'string' || typeof known === 'string') return given === known;
  if ('array' in given) {
    if (!('array' in known)) return false;
    return known.array.length === 0 || given.array.every((element) => known.array.some((other) => fits(element, other)));
  }
  if (!('object' in known)) return false;
  const keys = Object.keys(given.object);
  const knownKeys = Object.keys(known.object);
  return keys.length === knownKeys.length && keys.every((key) => key in known.object && fits(given.object[key]!, known.object[key]!));
}

/** As TypeScript writes a type: `{ chargeId: string, amount: number }`, `string[]`. */
export function shapeText(shape: Shape): string {
  if (typeof shape === 'string') return shape;
  if ('array' in shape) {
    if (shape.array.length === 0) return '[]';
    const element = shape.array.map(shapeText).join(' | ');
    return shape.array.length === 1 && !element.includes(' ') ? `${element}[]` : `(${element})[]`;
  }
  const fields = Object.entries(shape.object).map(([key, value]) => `${/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)}: ${shapeText(value)}`);
  return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`;
}
