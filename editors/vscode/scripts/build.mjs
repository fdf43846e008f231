// Bundles the extension (dist/extension.js, CommonJS, `vscode` external) and the pure model modules
// (dist/model/*.js) that the unit tests import.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'warning', absWorkingDir: root };
await build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'], minify: true, sourcemap: false });
const models = readdirSync(join(root, 'src', 'model')).filter((f) => f.endsWith('.ts')).map((f) => `src/model/${f}`);
await build({ ...common, entryPoints: models, outdir: 'dist/model' });
