// What a partner's own tools make of the intermediary's published contracts:
//   node check.js openapi URL   - @apidevtools/swagger-parser validates the
//                                 OpenAPI document served at URL
//   node check.js asyncapi URL  - @asyncapi/parser parses the AsyncAPI
//                                 document served at URL, errors fail
// Prints one line with what was read; exit 1 with the reasons otherwise.
'use strict';
const [kind, url] = process.argv.slice(2);

async function openapi() {
  const SwaggerParser = require('@apidevtools/swagger-parser');
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  const api = await SwaggerParser.validate(await res.json());
  const ops = Object.values(api.paths).reduce(
      (n, item) => n + Object.keys(item).length, 0);
  console.log(`openapi ${api.openapi} "${api.info.title}" ${ops} operations`);
}

async function asyncapi() {
  const { Parser, fromURL } = require('@asyncapi/parser');
  const parser = new Parser();
  const { document, diagnostics } = await fromURL(parser, url).parse();
  const errors = diagnostics.filter((d) => d.severity === 0);
  if (!document || errors.length) {
    throw new Error(errors.map((d) => `${d.path.join('/')}: ${d.message}`)
                        .join('\n') || 'no document');
  }
  const info = document.info();
  const channels = document.channels().all().map((c) => c.address());
  console.log(`asyncapi ${document.version()} "${info.title()}" ` +
              `${info.version()} channels ${channels.join(',')}`);
}

(kind === 'openapi' ? openapi() : asyncapi()).catch((e) => {
  console.error(e.message);
  process.exit(1);
});
