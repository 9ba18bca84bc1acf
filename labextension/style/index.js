import './base.css';
import './pending.css';
import './diffview.css';
