// The TypeScript declarations of the JSON lines (wasm/npm/types.d.ts) against
// the wire form's JSON Schema (schema/, generated from the core's Rust types).
// wasm/src/types/lines.rs writes the lines' unions (actions, notices, call
// results, stops, items) from that schema, and scripts/regen-wire rewrites
// both; this checks the committed files agree, variant by variant: the same
// tags, the same properties, a property nullable in one exactly when it is in
// the other, optional (or absent from some members of the variant) exactly
// when the schema lets it be absent. It fails when one was regenerated and not
// the other, or when the generator's narrowing (a stop split by `code`) loses
// a property.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TYPES = `${ROOT}wasm/npm/types.d.ts`;

/** @typedef {{ [key: string]: any }} Json */

/** @param {string} name @returns {Json} */
function schema(name) {
  return JSON.parse(readFileSync(`${ROOT}schema/${name}`, 'utf8'));
}

/** @param {Json} root @param {Json} node @returns {Json} */
function deref(root, node) {
  if (node.$ref && !node.properties) return root.$defs[node.$ref.replace('#/$defs/', '')];
  return node;
}

/**
 * An object schema's properties (a `$ref`'d part included) and required names.
 * @param {Json} root @param {Json} node
 * @returns {{ props: Map<string, Json>, required: Set<string> }}
 */
function properties(root, node) {
  const props = new Map(Object.entries(node.properties ?? {}));
  const required = new Set(node.required ?? []);
  if (node.$ref && node.properties) {
    const more = properties(root, root.$defs[node.$ref.replace('#/$defs/', '')]);
    for (const [k, v] of more.props) props.set(k, v);
    for (const r of more.required) required.add(r);
  }
  return { props, required };
}

/** @param {Json} root @param {Json} node @returns {boolean} */
function nullable(root, node) {
  const t = node.type;
  if (t === 'null' || (Array.isArray(t) && t.includes('null'))) return true;
  for (const m of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) if (nullable(root, m)) return true;
  if (node.$ref) return nullable(root, root.$defs[node.$ref.replace('#/$defs/', '')]);
  return false;
}

/**
 * The schema's union as {tag value: {prop: {nullable, optional}}}; `own` are the
 * properties the union's object has beside its members (a notice's message).
 * @param {Json} root @param {Json} node @param {string | null} tag (null: a plain object)
 * @returns {Map<string, Map<string, { nullable: boolean, optional: boolean }>>}
 */
function schemaVariants(root, node, tag) {
  const union = deref(root, node);
  const own = properties(root, union);
  /** @type {Map<string, Map<string, { nullable: boolean, optional: boolean }>>} */
  const out = new Map();
  if (!union.oneOf) {
    // A plain object (a stop: TypeScript narrows it by `code`).
    const fields = new Map();
    for (const [name, prop] of own.props) {
      fields.set(name, { nullable: nullable(root, prop), optional: !own.required.has(name) });
    }
    return out.set('*', fields);
  }
  for (const member of union.oneOf) {
    const { props, required } = properties(root, member);
    for (const [k, v] of own.props) props.set(k, v);
    for (const r of own.required) required.add(r);
    const fields = new Map();
    for (const [name, prop] of props) {
      if (name === tag) continue;
      fields.set(name, { nullable: nullable(root, prop), optional: !required.has(name) });
    }
    out.set(props.get(tag ?? '')?.const, fields);
  }
  return out;
}

const program = ts.createProgram([TYPES], { strict: true, noEmit: true });
const checker = program.getTypeChecker();
const source = program.getSourceFile(TYPES);

/** @param {string} name @returns {ts.Type} */
function declared(name) {
  assert.ok(source);
  for (const statement of source.statements) {
    if (ts.isTypeAliasDeclaration(statement) && statement.name.text === name) {
      return checker.getTypeAtLocation(statement.name);
    }
  }
  throw new Error(`types.d.ts declares no ${name}`);
}

/** @param {ts.Symbol} symbol @returns {ts.Type} */
function typeOf(symbol) {
  assert.ok(source);
  return checker.getTypeOfSymbolAtLocation(symbol, source);
}

/** @param {ts.Type} type @returns {boolean} */
function hasNull(type) {
  if (type.flags & ts.TypeFlags.Null) return true;
  return type.isUnion() && type.types.some((t) => (t.flags & ts.TypeFlags.Null) !== 0);
}

/**
 * A TypeScript union as {tag value: {prop: {nullable, optional}}}: the members of
 * one tag merged (a property absent from some of them is optional).
 * @param {string} name @param {string | null} tag (null: all members as one)
 * @returns {Map<string, Map<string, { nullable: boolean, optional: boolean }>>}
 */
function tsVariants(name, tag) {
  const type = declared(name);
  const members = type.isUnion() ? type.types : [type];
  /** @type {Map<string, ts.Type[]>} */
  const groups = new Map();
  for (const member of members) {
    if (!tag) {
      groups.set('*', [...(groups.get('*') ?? []), member]);
      continue;
    }
    const symbol = member.getProperty(tag);
    assert.ok(symbol, `a member of ${name} has no ${tag}`);
    const literal = typeOf(symbol);
    assert.ok(literal.isStringLiteral(), `${name}'s ${tag} is not a string literal`);
    groups.set(literal.value, [...(groups.get(literal.value) ?? []), member]);
  }
  const out = new Map();
  for (const [value, group] of groups) {
    const fields = new Map();
    const names = new Set(group.flatMap((m) => checker.getPropertiesOfType(m).map((p) => p.name)));
    for (const prop of names) {
      if (prop === tag) continue;
      let isNull = false;
      let optional = false;
      for (const member of group) {
        const symbol = member.getProperty(prop);
        if (!symbol || symbol.flags & ts.SymbolFlags.Optional) optional = true;
        if (symbol && hasNull(typeOf(symbol))) isNull = true;
      }
      fields.set(prop, { nullable: isNull, optional });
    }
    out.set(value, fields);
  }
  return out;
}

/**
 * The differences of two unions, one line each.
 * @param {string} what
 * @param {Map<string, Map<string, { nullable: boolean, optional: boolean }>>} wanted the schema's
 * @param {Map<string, Map<string, { nullable: boolean, optional: boolean }>>} got types.d.ts's
 * @returns {string[]}
 */
function compare(what, wanted, got) {
  const problems = [];
  for (const [tag, fields] of wanted) {
    const mine = got.get(tag);
    if (!mine) {
      problems.push(`${what} "${tag}": no member in types.d.ts`);
      continue;
    }
    for (const [prop, shape] of fields) {
      const have = mine.get(prop);
      if (!have) problems.push(`${what} "${tag}": types.d.ts lacks \`${prop}\``);
      else if (have.nullable !== shape.nullable)
        problems.push(`${what} "${tag}".${prop}: nullable ${shape.nullable} in the schema, ${have.nullable} in types.d.ts`);
      else if (have.optional !== shape.optional)
        problems.push(`${what} "${tag}".${prop}: optional ${shape.optional} in the schema, ${have.optional} in types.d.ts`);
    }
    for (const prop of mine.keys()) {
      if (!fields.has(prop)) problems.push(`${what} "${tag}": \`${prop}\` is in types.d.ts, not in the schema`);
    }
  }
  for (const tag of got.keys()) {
    if (!wanted.has(tag)) problems.push(`${what} "${tag}": in types.d.ts, not in the schema`);
  }
  return problems;
}

const action = schema('action.json');
const item = schema('item.json');
const stop = schema('stop.json');

/** The unions of the lines: schema (document, node, tag) beside the TypeScript name. */
const UNIONS = [
  ['action', action, action, 'type', 'Action'],
  ['notice', action, action.$defs.NoticeJson, 'kind', 'Notice'],
  ['call result', action, action.$defs.ResultLine, 'kind', 'CallResult'],
  ['stop', stop, stop, null, 'Stop'],
  ['item', item, item, 'type', 'OnairItem'],
];

test('every line variant and field of the schema is in types.d.ts, alike', () => {
  const problems = [];
  for (const [what, root, node, tag, name] of UNIONS) {
    problems.push(...compare(what, schemaVariants(root, node, tag), tsVariants(name, tag)));
  }
  assert.deepEqual(problems, []);
});

test('the comparison sees a field types.d.ts lacks', () => {
  const wanted = schemaVariants(action, action, 'type');
  wanted.get('timer')?.set('firedAtMs', { nullable: false, optional: false });
  wanted.get('wait')?.set('untilMs', { nullable: false, optional: false });
  wanted.get('milestone')?.set('user', { nullable: false, optional: false });
  assert.deepEqual(compare('action', wanted, tsVariants('Action', 'type')), [
    'action "timer": types.d.ts lacks `firedAtMs`',
    'action "wait".untilMs: nullable false in the schema, true in types.d.ts',
    'action "milestone".user: optional false in the schema, true in types.d.ts',
  ]);
  assert.equal(tsVariants('Action', 'type').size, schemaVariants(action, action, 'type').size);
  assert.ok(tsVariants('Notice', 'kind').size >= 11);
});
