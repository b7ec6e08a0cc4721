#!/usr/bin/env node
// Copies the files the compiled server reads at run time besides its JavaScript (today the A2A .proto) from src/
// into dist/src/, so that dist/ is complete on its own (the Docker image ships dist/ only).
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ASSET = /\.proto$/;

function copy(dir) {
  for (const name of readdirSync(dir)) {
    const from = join(dir, name);
    if (statSync(from).isDirectory()) copy(from);
    else if (ASSET.test(name)) cpSync(from, join('dist', from));
  }
}

copy('src');
