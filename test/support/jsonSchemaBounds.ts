/**
 * The numeric bounds of one JSON-schema property, in one form whichever side wrote it: zod's
 * `z.toJSONSchema`, pydantic's `model_json_schema()`, or the live-settings table.
 */
export interface Bounds {
  type: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  exclusiveMaximum?: number;
}

interface JsonSchemaProperty {
  type?: string;
  anyOf?: JsonSchemaProperty[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  exclusiveMaximum?: number;
}

/**
 * Optional fields (pydantic writes `anyOf: [X, null]`) count as X; zod's implicit safe-integer
 * limits on `.int()` count as no bound; an integer's exclusive bound becomes the inclusive one.
 */
export function boundsOf(schema: unknown): Bounds {
  const property = schema as JsonSchemaProperty;
  const branches = (property.anyOf ?? [property]).filter((b) => b.type !== 'null');
  if (branches.length !== 1) throw new Error(`not one type: ${JSON.stringify(property)}`);
  const p = branches[0] as JsonSchemaProperty;
  const out: Bounds = { type: p.type ?? 'unknown' };
  const integer = p.type === 'integer';
  const bounded = (n: number | undefined) =>
    n !== undefined && Math.abs(n) !== Number.MAX_SAFE_INTEGER ? n : undefined;
  const min = bounded(p.minimum);
  const max = bounded(p.maximum);
  const gt = bounded(p.exclusiveMinimum);
  const lt = bounded(p.exclusiveMaximum);
  if (min !== undefined) out.minimum = min;
  if (max !== undefined) out.maximum = max;
  if (gt !== undefined) {
    if (integer) out.minimum = Math.max(out.minimum ?? -Infinity, gt + 1);
    else out.exclusiveMinimum = gt;
  }
  if (lt !== undefined) {
    if (integer) out.maximum = Math.min(out.maximum ?? Infinity, lt - 1);
    else out.exclusiveMaximum = lt;
  }
  return out;
}

/** The `properties` of an object schema, by name. */
export function propertiesOf(schema: unknown): Record<string, JsonSchemaProperty> {
  const properties = (schema as { properties?: Record<string, JsonSchemaProperty> }).properties;
  if (!properties) throw new Error(`not an object schema: ${JSON.stringify(schema).slice(0, 200)}`);
  return properties;
}
