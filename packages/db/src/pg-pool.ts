import pg from "pg";

// Postgres type ids that @prisma/adapter-pg does not map (upstream prisma/orm
// issue 27403): catalog columns of type `name` (19) and `name[]` (1003). The
// Prisma CLI's JS schema engine reads such columns when it inspects a database,
// so we present them as `text` (25) and `text[]` (1009), which they are in all but
// name.
const TYPE_ID_REWRITES: ReadonlyMap<number, number> = new Map([
  [19, 25],
  [1003, 1009],
]);

function rewriteFieldTypes(result: pg.QueryResult): pg.QueryResult {
  for (const field of result.fields ?? []) {
    const replacement = TYPE_ID_REWRITES.get(field.dataTypeID);
    if (replacement !== undefined) field.dataTypeID = replacement;
  }
  return result;
}

/** A pg.Pool whose promise-form query results carry only type ids Prisma maps. */
export class PrismaCompatiblePool extends pg.Pool {
  // biome-ignore lint/suspicious/noExplicitAny: mirrors pg.Pool's overloaded signature
  override query(...args: any[]): any {
    const last = args[args.length - 1];
    // Callback form: leave untouched (Prisma only uses the promise form).
    if (typeof last === "function") return super.query(...(args as [string]));
    return (super.query(...(args as [string])) as Promise<pg.QueryResult>).then(rewriteFieldTypes);
  }
}
