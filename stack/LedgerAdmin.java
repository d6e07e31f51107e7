// The few admin requests librdkafka's Node binding does not expose (ACLs, topic configs, leadership), through Kafka's
// own Java AdminClient from the local stack's Maven-resolved jars. Run by stack/jvm-admin.ts as a
// single-file program (java -cp '<kafka libs>/*' LedgerAdmin.java ...); never by hand.
//
//   LedgerAdmin <bootstrap> <client.properties|-> create-acls <acls.json>
//   LedgerAdmin <bootstrap> <client.properties|-> describe-configs <topic> [name ...]   (prints JSON)
//   LedgerAdmin <bootstrap> <client.properties|-> alter-configs <topic> <name=value> ...
//   LedgerAdmin <bootstrap> <client.properties|-> move-leader <topic> <partition> <node>
//       makes <node> the partition's preferred replica (a reassignment that only reorders its replicas), prints
//       "moving <leader before>" right before it asks for a preferred-leader election, "elected" or "election
//       failed: ..." when it is answered; reads "killed <node>" (or anything else) from stdin, and after a
//       kill prints "writable <leader>" once another broker leads and <node> is out of the in-sync replicas;
//       last "moved <leader after>"
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.File;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.*;

public class LedgerAdmin {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    if (!args[1].equals("-")) try (FileInputStream in = new FileInputStream(args[1])) { props.load(in); }
    props.put("bootstrap.servers", args[0]);
    props.put("request.timeout.ms", "20000");
    props.put("default.api.timeout.ms", "60000");
    ObjectMapper json = new ObjectMapper();
    try (Admin admin = Admin.create(props)) {
      switch (args[2]) {
        case "create-acls": {
          List<AclBinding> bindings = new ArrayList<>();
          for (JsonNode a : json.readTree(new File(args[3]))) {
            bindings.add(new AclBinding(
                new ResourcePattern(ResourceType.valueOf(a.get("resourceType").asText()), a.get("name").asText(), PatternType.valueOf(a.get("pattern").asText())),
                new AccessControlEntry(a.get("principal").asText(), "*", AclOperation.valueOf(a.get("operation").asText()), AclPermissionType.ALLOW)));
          }
          admin.createAcls(bindings).all().get();
          System.out.println(bindings.size());
          break;
        }
        case "describe-configs": {
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, args[3]);
          Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
          Set<String> names = new HashSet<>(Arrays.asList(args).subList(4, args.length));
          Map<String, String> out = new TreeMap<>();
          for (ConfigEntry e : c.entries()) if (names.isEmpty() || names.contains(e.name())) out.put(e.name(), e.value());
          System.out.println(json.writeValueAsString(out));
          break;
        }
        case "alter-configs": {
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, args[3]);
          List<AlterConfigOp> ops = new ArrayList<>();
          for (String kv : Arrays.asList(args).subList(4, args.length)) {
            int i = kv.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, i), kv.substring(i + 1)), AlterConfigOp.OpType.SET));
          }
          admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
          break;
        }
        case "move-leader": {
          String topic = args[3];
          TopicPartition tp = new TopicPartition(topic, Integer.parseInt(args[4]));
          int node = Integer.parseInt(args[5]);
          TopicPartitionInfo before = partitionInfo(admin, tp);
          List<Integer> order = new ArrayList<>(List.of(node));
          for (Node r : before.replicas()) if (r.id() != node) order.add(r.id());
          // Same replicas, another order: nothing to copy, the reassignment ends at once; the leader stays.
          admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(order)))).all().get();
          while (admin.listPartitionReassignments(Set.of(tp)).reassignments().get().containsKey(tp)) Thread.sleep(20);
          Node leader = partitionInfo(admin, tp).leader();
          say("moving " + (leader == null ? -1 : leader.id()));
          KafkaFuture<Map<TopicPartition, Optional<Throwable>>> election = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions();
          // Not needed: the reorder alone moved the leader. Anything else (the new leader killed meanwhile) is said.
          election.whenComplete((r, e) -> {
            Throwable failed = e != null ? e : r.getOrDefault(tp, Optional.empty()).orElse(null);
            say(failed == null || failed instanceof ElectionNotNeededException ? "elected" : "election failed: " + failed);
          });
          // The caller names the broker it killed; until another broker leads and the killed one is out of
          // the in-sync replicas (writes with acks=all go through again), the partition is looked at.
          String line = new BufferedReader(new InputStreamReader(System.in)).readLine();
          int killed = line != null && line.startsWith("killed ") ? Integer.parseInt(line.substring(7).trim()) : -1;
          while (killed >= 0) {
            try {
              TopicPartitionInfo p = admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs(2000)).allTopicNames().get().get(topic).partitions().get(tp.partition());
              if (p.leader() != null && p.leader().id() != killed && p.isr().size() >= 2 && p.isr().stream().noneMatch(n -> n.id() == killed)) {
                say("writable " + p.leader().id());
                break;
              }
            } catch (Exception e) {
              // A broker going or coming: ask again.
            }
            Thread.sleep(100);
          }
          try {
            election.get(60, TimeUnit.SECONDS);
          } catch (Exception e) {
            // said by the callback
          }
          try {
            leader = partitionInfo(admin, tp).leader();
          } catch (Exception e) {
            leader = null;
          }
          say("moved " + (leader == null ? -1 : leader.id()));
          break;
        }
        default:
          throw new IllegalArgumentException("unknown command " + args[2]);
      }
    }
  }

  private static synchronized void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  private static TopicPartitionInfo partitionInfo(Admin admin, TopicPartition tp) throws Exception {
    return admin.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic()).partitions().get(tp.partition());
  }
}
