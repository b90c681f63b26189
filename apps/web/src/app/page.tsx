import { ServiceStatus } from "./service-status.tsx";

export default function HomePage() {
  return (
    <main>
      <h1>OpenTinker</h1>
      <p>
        Train and serve LLM policies with agentic reinforcement learning and supervised fine-tuning: many LoRA
        adapters over one frozen base model.
      </p>
      <h2>Service</h2>
      <ServiceStatus />
    </main>
  );
}
