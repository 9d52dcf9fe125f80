/**
 * Entry point: mounts the shell into `#app`, or, in a standalone HTML file that carries a
 * recorded run (`recording.ts`, design 0034), the replay page of that run.
 */
import { mount } from 'svelte';
import App from './App.svelte';
import Replay from './Replay.svelte';
import { readRecording } from './recording';
import './app.css';
import './widgets/ui.css';

const target = document.getElementById('app');
if (target === null) throw new Error('index.html lacks #app');
const recording = readRecording(document);
if (recording === null) mount(App, { target });
else mount(Replay, { target, props: { recording } });
