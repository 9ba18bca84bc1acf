// Writes install.json beside the built extension so `jupyter labextension list`
// says which Python package provides it and how to remove it.
import { writeFileSync } from 'node:fs';

const info = {
  packageManager: 'python',
  packageName: 'tinyagent-fs',
  uninstallInstructions:
    'Use your Python package manager (pip, conda, etc.) to uninstall the package tinyagent-fs'
};
writeFileSync(
  new URL('../../tinyagent_fs/labextension/install.json', import.meta.url),
  JSON.stringify(info, null, 2) + '\n'
);
