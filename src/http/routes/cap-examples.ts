import { atomFeed } from '../../domain/cap/atom-feed.js';
import { currentAlert } from '../../domain/cap/messages.js';
import { capDocument } from '../../domain/cap/write-alert.js';
import type { EmergencyRecord } from '../../domain/emergencies/schema.js';

/** The OpenAPI examples of the CAP routes, built by the code that builds the real documents, so they stay true to it. */

const ORG_ID = '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d';
const EMERGENCY_ID = '0195f3a8-8d11-7b52-a3c4-6f9e2d3b5c7e';
const BASE = `/api/public/v1/orgs/${ORG_ID}`;

const emergency: EmergencyRecord = {
  emergencyId: EMERGENCY_ID,
  orgId: ORG_ID,
  status: 'categorized',
  externalId: null,
  category: { id: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b70', name: 'Fire', color: '#D32F2F', severity: 5 },
  source: null,
  description: 'Smoke in the east stairwell',
  occurredAt: '2026-11-21T17:44:29.123Z',
  createdAt: '2026-11-21T17:44:29.123Z',
  resolvedAt: null,
  resolvedBy: null,
  declaredBy: { type: 'api_key', id: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b71', name: 'front desk' },
  location: { latitude: 47.6205, longitude: -122.3493, floorId: 'B-2' },
  resolutionNote: null,
  metadata: null,
  exercise: false,
};
const row = { id: EMERGENCY_ID, record: '', sequence: 2, updated_at: '2026-11-21T17:46:02.000Z' };
const transitions = [{ emergency_id: EMERGENCY_ID, event_type: 'emergency.categorized', sequence: 2, created_at: '2026-11-21T17:46:02.000Z' }];
const alert = currentAlert(emergency, row, transitions, 'Lincoln High School');

export const CAP_ALERT_EXAMPLE = capDocument(alert);

export const CAP_FEED_EXAMPLE = atomFeed(
  { id: ORG_ID, name: 'Lincoln High School' },
  [{ emergency, alert, updated: '2026-11-21T17:46:02.000Z' }],
  { feed: `${BASE}/cap/feed`, emergencies: `${BASE}/emergencies` },
  '2026-11-21T17:50:00.000Z',
);

export const CAP_INGEST_EXAMPLE = `<?xml version="1.0" encoding="UTF-8"?>
<alert xmlns="urn:oasis:names:tc:emergency:cap:1.2">
  <identifier>KSTO1055887203</identifier>
  <sender>KSTO@NWS.NOAA.GOV</sender>
  <sent>2026-11-21T14:57:00-07:00</sent>
  <status>Actual</status>
  <msgType>Alert</msgType>
  <scope>Public</scope>
  <info>
    <category>Met</category>
    <event>SEVERE THUNDERSTORM</event>
    <urgency>Immediate</urgency>
    <severity>Severe</severity>
    <certainty>Observed</certainty>
    <senderName>NATIONAL WEATHER SERVICE SACRAMENTO CA</senderName>
    <description>A severe thunderstorm is moving over the campus.</description>
    <area>
      <areaDesc>Campus</areaDesc>
      <circle>38.47,-120.14 0</circle>
    </area>
  </info>
</alert>
`;
