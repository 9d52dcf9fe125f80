/** Entry point: mounts the shell into `#app`. */
import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import './widgets/ui.css';

const target = document.getElementById('app');
if (target === null) throw new Error('index.html lacks #app');
mount(App, { target });
