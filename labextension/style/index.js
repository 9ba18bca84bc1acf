import './base.css';
import './pending.css';
