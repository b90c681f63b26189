// Create requests on the wire: one flat object per resource (REST clients and the
// OpenAPI document see plain fields), checked by its kind's own schema.
import { z } from "zod";

/** Reports every issue of `schema` on `value` as issues of the enclosing check. */
export function delegate(schema: z.ZodType) {
  return (value: unknown, ctx: z.RefinementCtx) => {
    const result = schema.safeParse(value);
    if (!result.success)
      for (const issue of result.error.issues)
        ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  };
}

/**
 * A config parsed by kind (by `delegate`, whose messages name the field), shown
 * in the OpenAPI document as any of the kinds' own schemas, so a client sees
 * every field it may send.
 */
export function configByKind(kinds: Readonly<Record<string, z.ZodType>>) {
  const anyOf = Object.entries(kinds).map(([kind, config]) => {
    const { $schema: _, ...schema } = z.toJSONSchema(config, { io: "input", unrepresentable: "any" });
    return { title: `config of kind ${kind}`, ...schema };
  });
  return z.record(z.string(), z.unknown()).meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
      jsonSchema.anyOf = anyOf;
    },
  });
}
