// Removes compiled and built output so a production build starts clean.
import { rmSync } from 'node:fs';

for (const path of [
  '../lib',
  '../tsconfig.tsbuildinfo',
  '../../tinyagent_fs/labextension'
]) {
  rmSync(new URL(path, import.meta.url), { recursive: true, force: true });
}
